import { ToolError } from '../../domain/errors.ts';

/** The rules a sandbox refusal can name in its `security_event`. */
export type SandboxRule =
  | 'nul_byte'
  | 'path_too_long'
  | 'outside_workspace'
  | 'symlink_escape'
  | 'dangling_symlink'
  | 'protected_file'
  | 'run_record'
  | 'shell_syntax'
  | 'program_path'
  | 'not_allowlisted'
  | 'forbidden_subcommand'
  | 'forbidden_flag'
  | 'path_argument_outside'
  | 'no_os_sandbox'
  | 'protected_file_modified';

/**
 * A refusal: a message the model can act on, plus the `security_event` details the loop logs.
 * `requested` and `resolved` are what the model asked for and where it led; never secret values.
 */
export function sandboxViolation(
  message: string,
  rule: SandboxRule,
  requested: unknown,
  resolved?: unknown,
): ToolError {
  return new ToolError(message, {
    securityEvent: {
      eventType: 'sandbox_violation',
      rule,
      requested,
      ...(resolved === undefined ? {} : { resolved }),
    },
  });
}
