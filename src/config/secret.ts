/**
 * A value that must never be written anywhere (an API key, SPEC §5): JSON, string conversion and
 * Node's inspection all show `[redacted]`; only `reveal()` gives the value, to the one adapter
 * that sends it to its own URL.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return '[redacted]';
  }

  toString(): string {
    return '[redacted]';
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return 'Secret([redacted])';
  }
}
