/** A list a client can be told has changed. */
export type ListedKind = "tools" | "resources" | "prompts";

/** Sends one message to the client; rejects when it could not be delivered. */
type Send = () => Promise<void>;

/**
 * What a front end sends its client unasked, and when. The MCP lifecycle lets a server speak
 * first only once the session has begun: the client sent `initialize`, was answered, and sent
 * `notifications/initialized`. Before that nothing unasked leaves: upstreams coming up, summaries
 * landing and their log lines say nothing to a client that has not begun. (Answers to the
 * client's own requests, and what is sent on behalf of one, such as progress, go with their
 * request and are not this class's.)
 *
 * A list changed is news only for a list the client has seen: {@link listed} marks it when the
 * client asks for it, and a change before that is no change for the client (the list it gets is
 * the new one). A change the client should hear of that comes before the session has begun (a
 * client that listed early) is held, once per list or resource, and sent when it begins; a log
 * line then is dropped, since it tells of a moment, not of a state the client would miss.
 *
 * {@link begin} is the only way the session starts: the front end calls it on
 * `notifications/initialized`; a protocol without initialize would call it on the first request.
 */
export class ClientSession {
  private begun = false;
  private readonly seen = new Set<ListedKind>();
  /** Messages held until the session begins, by what they tell of (a later one replaces one held). */
  private readonly held = new Map<string, { method: string; send: Send }>();

  /** `undelivered(method)` handles the failure of a send (the client went away meanwhile). */
  constructor(private readonly undelivered: (method: string) => (err: unknown) => void) {}

  /** True once the client may be sent messages it did not ask for. */
  get hasBegun(): boolean {
    return this.begun;
  }

  /** Opens the session: what was held goes out, in the order it was first held, then all else as it comes. */
  begin(): void {
    if (this.begun) return;
    this.begun = true;
    const held = [...this.held.values()];
    this.held.clear();
    for (const { method, send } of held) this.sendNow(method, send);
  }

  /** Marks `kind` as seen by the client (it asked for the list): its changes are news from now on. */
  listed(kind: ListedKind): void {
    this.seen.add(kind);
  }

  hasListed(kind: ListedKind): boolean {
    return this.seen.has(kind);
  }

  /** Tells the client that list `kind` changed, if it has seen that list: now, or when the session begins. */
  listChanged(kind: ListedKind, send: Send): void {
    if (!this.seen.has(kind)) return;
    this.state(`notifications/${kind}/list_changed`, kind, send);
  }

  /**
   * Sends a message that tells of a state the client should not miss (`key` names it: a later
   * message with the same key says all an earlier one did): now, or once the session begins.
   */
  state(method: string, key: string, send: Send): void {
    if (this.begun) this.sendNow(method, send);
    else if (!this.held.has(key)) this.held.set(key, { method, send });
  }

  /** Sends a message that tells of a moment (a log line): now if the session has begun, else never. */
  moment(method: string, send: Send): void {
    if (this.begun) this.sendNow(method, send);
  }

  private sendNow(method: string, send: Send): void {
    send().catch(this.undelivered(method));
  }
}
