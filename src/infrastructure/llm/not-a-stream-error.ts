/** The server answered a streaming chat request with something other than an event stream. */
export class NotAStreamError extends Error {
  readonly status: number;
  readonly contentType: string;

  constructor(status: number, contentType: string, body: string) {
    const start = body.replace(/\s+/g, ' ').trim().slice(0, 120);
    super(
      `answered ${status} with ${contentType.split(';')[0]} instead of an event stream${start === '' ? '' : ` ("${start}")`}`,
    );
    this.name = 'NotAStreamError';
    this.status = status;
    this.contentType = contentType;
  }
}
