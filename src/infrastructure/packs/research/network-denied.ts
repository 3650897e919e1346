import { ToolError } from '../../../domain/errors.ts';

/**
 * The refusal of a network tool for a specialist without `network_allowed: true`. Raised before
 * any DNS query or connection, and logged as a `network_denied` security event.
 */
export function networkDenied(tool: string, requested: string): ToolError {
  return new ToolError(
    `${tool} is refused: this specialist may not use the network. ` +
      'An operator can allow it with network_allowed: true in its fabric.yaml entry.',
    { securityEvent: { eventType: 'network_denied', rule: 'network_allowed_false', requested } },
  );
}
