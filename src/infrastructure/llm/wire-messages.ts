import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { simpleToolSchema } from '../../domain/tool-schema.ts';
import type { ChatMessage, ToolSpec } from '../../domain/messages.ts';

/** Domain messages in the OpenAI chat-completions shape. */
export function toOpenAiMessages(messages: readonly ChatMessage[]): ChatCompletionMessageParam[] {
  return messages.map(toOpenAiMessage);
}

function toOpenAiMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: message.content };
    case 'assistant': {
      // Reasoning goes back only when the profile asks (SPEC §16), in the DeepSeek-style field.
      const reasoning = message.reasoning === undefined ? {} : { reasoning_content: message.reasoning };
      if (message.toolCalls.length === 0)
        return { role: 'assistant', content: message.content, ...reasoning };
      return {
        role: 'assistant',
        // Some local servers reject `null` content; an empty string is accepted everywhere.
        content: message.content,
        ...reasoning,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: wireArguments(call.arguments) },
        })),
      };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

/** Tool specs in the OpenAI `tools` parameter shape. */
export function toOpenAiTools(tools: readonly ToolSpec[]): ChatCompletionTool[] {
  return tools.map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: simpleToolSchema(tool.parameters, { wire: true }),
    },
  }));
}

/**
 * Arguments as sent back in the history. Ollama parses them into an object and answers 400 to
 * invalid JSON, so a malformed call is echoed as `{}` (the tool result already told the model).
 */
function wireArguments(text: string): string {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? text : '{}';
  } catch {
    return '{}';
  }
}
