// The newest changes of a deployment's stream, read once per process for all its followers (a
// gateway's /events streams). Each follower used to have a JetStream consumer of its own: 40
// clients replaying the feed made the gateway receive and parse every message 40 times, which
// cost it more than writing the events out (issue 57). Now one ordered consumer reads the stream
// from the RING_SIZE-th newest message on and keeps what it read, in order; a follower walks that
// memory with a cursor (its sequence number), and waits at its end for the next message. A
// follower resuming before what the tail holds, or left behind by it (a client slower than
// RING_SIZE messages), is handed to a consumer of its own from where it is: nothing is skipped.
import { DeliverPolicy, type JetStreamClient } from "nats";
import type { BusMessage } from "./bus.ts";

/** Messages a tail keeps for its followers. */
export const RING_SIZE = 8_192;
/** Messages the tail's consumer asks the server for at once. */
const PULL_BATCH = 256;

export interface Kept {
  seq: number;
  msg: BusMessage;
}

/** What a follower finds after its cursor: messages, nothing yet, or that the tail no longer holds them. */
export type After = { messages: Kept[] } | { gone: true };

export class Tail {
  private readonly kept: Kept[] = [];
  /** Index in `kept` of the oldest message still held (the ones before it are dropped lazily). */
  private head = 0;
  /** Followers whose cursor holds every message from here on (the oldest held, or the tail's start). */
  private from: number;
  private waiting: (() => void)[] = [];
  private ended = false;
  private stopConsumer: (() => void) | undefined;

  private constructor(from: number) {
    this.from = from;
  }

  /**
   * Reads `stream` (its subjects `filter`) from `startSeq` on, keeping the last `size` messages;
   * `wrap` makes each message's BusMessage. The tail ends when its consumer does (the connection
   * closed, the stream deleted): its followers then go on with consumers of their own.
   */
  static async start(js: JetStreamClient, stream: string, filter: string, startSeq: number, wrap: (subject: string, decode: () => unknown) => BusMessage, size = RING_SIZE): Promise<Tail> {
    const tail = new Tail(startSeq);
    const consumer = await js.consumers.get(stream, { filterSubjects: filter, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSeq });
    const messages = await consumer.consume({ max_messages: PULL_BATCH });
    tail.stopConsumer = () => void messages.close().catch(() => {});
    void (async () => {
      for await (const m of messages) tail.push({ seq: m.seq, msg: wrap(m.subject, () => m.json()) }, size);
    })()
      .catch(() => {})
      .finally(() => tail.end());
    return tail;
  }

  private push(k: Kept, size: number): void {
    this.kept.push(k);
    if (this.kept.length - this.head > size) {
      this.from = this.kept[this.head]!.seq + 1;
      this.kept[this.head++] = undefined as unknown as Kept;
      // Dropped entries leave the array in one splice now and then, not one shift per message.
      if (this.head >= size) {
        this.kept.splice(0, this.head);
        this.head = 0;
      }
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiting;
    this.waiting = [];
    for (const r of w) r();
  }

  private end(): void {
    this.ended = true;
    this.wake();
  }

  stop(): void {
    this.stopConsumer?.();
  }

  isEnded(): boolean {
    return this.ended;
  }

  /** Whether a follower whose last message was `cursor` finds every later one here. */
  holdsAfter(cursor: number): boolean {
    return !this.ended && cursor + 1 >= this.from;
  }

  /** The sequence number from which the tail holds every message: a follower before it has that many before it to read elsewhere. */
  oldestHeld(): number {
    return this.from;
  }

  /** Up to `max` messages after `cursor`, in order; none when the tail has not read past it yet. */
  after(cursor: number, max: number): After {
    if (!this.holdsAfter(cursor)) return { gone: true };
    // The first message past the cursor: sequence numbers grow along the array (they may skip).
    let lo = this.head;
    let hi = this.kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.kept[mid]!.seq <= cursor) lo = mid + 1;
      else hi = mid;
    }
    return { messages: this.kept.slice(lo, Math.min(lo + max, this.kept.length)) };
  }

  /** Resolves when the tail has read another message, or ended. */
  next(): Promise<void> {
    if (this.ended) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}
