/**
 * Attribute names of the OpenTelemetry GenAI semantic conventions (semconv 1.37+, status
 * "Development"), copied here rather than imported: the conventions package marks them
 * unstable and renames them between releases. https://opentelemetry.io/docs/specs/semconv/gen-ai/
 */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  conversationId: 'gen_ai.conversation.id',
  agentName: 'gen_ai.agent.name',
  agentId: 'gen_ai.agent.id',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  /** Seconds from the request to the stream's first chunk. */
  responseTimeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadInputTokens: 'gen_ai.usage.cache_read.input_tokens',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolCallArguments: 'gen_ai.tool.call.arguments',
  toolCallResult: 'gen_ai.tool.call.result',
} as const;

/** General conventions the GenAI spans use. */
export const SERVER_ADDRESS = 'server.address';
export const SERVER_PORT = 'server.port';
export const ERROR_TYPE = 'error.type';

/**
 * `gen_ai.provider.name` per backend kind. The conventions name none of the local servers;
 * these are the fabric's, as the issue fixed them (`openai` is the conventions' own).
 */
export const PROVIDER_NAMES = {
  lm_studio: 'lm_studio',
  ollama: 'ollama',
  llama_cpp: 'llama_cpp',
  vllm: 'vllm',
  openai: 'openai',
} as const;
