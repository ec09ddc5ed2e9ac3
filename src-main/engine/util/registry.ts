/**
 * Named implementations a config chooses by name (reward schemes, advantage modes): the one
 * registry rule for the engine's extension points.
 */
export class Registry<T> {
  private readonly entries = new Map<string, T>();

  /** `what` names one entry in messages ("reward scheme"), `plural` the list ("schemes"). */
  constructor(
    private readonly what: string,
    private readonly plural: string,
  ) {}

  /** Adds an entry; a name can be registered once (a silent override would change old runs' meaning). */
  register(name: string, value: T): void {
    if (this.entries.has(name)) throw new Error(`${this.what} "${name}" is already registered`);
    this.entries.set(name, value);
  }

  /** The entry of `name`; an unknown name is refused with the known ones. */
  get(name: string): T {
    const value = this.entries.get(name);
    if (value === undefined) throw new Error(`unknown ${this.what} "${name}"; known ${this.plural}: ${this.names().join(', ')}`);
    return value;
  }

  /** Registered names, in registration order. */
  names(): string[] {
    return [...this.entries.keys()];
  }
}
