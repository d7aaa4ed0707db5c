// The chaos check's own checks (deploy/hosts-feed.ts) on doctored lists: what a follower of
// /events heard held to the stream, and how cascades were announced. Each must find what it is
// there to find, or the chaos run's zeros would say nothing.
import { describe, expect, it } from "vitest";
import { type Cascade, cascadeAnnouncements, cascadeLeftovers, checkFeed, type Heard, type StreamEvent } from "../../deploy/hosts-feed.ts";

const B1 = "b1";
const B2 = "b2";
/** The stream: two bridges made, one renamed, one deleted; 13 and 14 are someone else's. */
const stream: StreamEvent[] = [
  { seq: 10, event: "created", kind: "bridge.Bridge", id: B1 },
  { seq: 11, event: "created", kind: "bridge.Bridge", id: B2 },
  { seq: 12, event: "updated", kind: "bridge.Bridge", id: B1 },
  { seq: 15, event: "deleted", kind: "bridge.Bridge", id: B2 },
];
const acknowledged = [
  { event: "created", id: B1 },
  { event: "created", id: B2 },
  { event: "updated", id: B1 },
  { event: "deleted", id: B2 },
];
const heard = (...seqs: number[]): Heard[] =>
  seqs.map((seq) => {
    const e = stream.find((s) => s.seq === seq);
    return { seq, event: e?.event ?? "created", id: e?.id ?? `other-${seq}`, host: 1 };
  });

describe("a follower held to the stream", () => {
  it("is whole when it heard every event once, in order, other items' events among them", () => {
    expect(checkFeed(heard(10, 11, 12, 13, 14, 15), [], stream, acknowledged)).toEqual({
      heard: 4,
      repeats: 0,
      silentGaps: 0,
      neverHeard: 0,
      excused: 0,
      acknowledgedNotHeard: 0,
      acknowledgedHeardTwice: 0,
      mismatched: 0,
    });
  });

  it("finds an event heard again after a resume, as a repeat and as a write heard twice", () => {
    const r = checkFeed(heard(10, 11, 12, 11, 12, 15), [], stream, acknowledged);
    expect(r.repeats).toBe(2);
    expect(r.acknowledgedHeardTwice).toBe(2);
  });

  it("finds an event skipped without a word, and the acknowledged write it was", () => {
    const r = checkFeed(heard(10, 11, 13, 15), [], stream, acknowledged);
    expect(r.silentGaps).toBe(1);
    expect(r.acknowledgedNotHeard).toBe(1);
    expect(r.repeats).toBe(0);
  });

  it("excuses what a 410 announced missed, and only that", () => {
    const told = checkFeed(heard(10, 15), [{ after: 10, until: 15, reason: "410" }], stream, acknowledged);
    expect(told).toMatchObject({ silentGaps: 0, excused: 2, acknowledgedNotHeard: 0 });
    // The 410 came after 11: 11 itself was skipped unannounced.
    const late = checkFeed(heard(10, 15), [{ after: 11, until: 15, reason: "410" }], stream, acknowledged);
    expect(late).toMatchObject({ silentGaps: 1, excused: 1, acknowledgedNotHeard: 1 });
  });

  it("finds a follower that never caught up with the last events", () => {
    expect(checkFeed(heard(10, 11), [], stream, acknowledged)).toMatchObject({ silentGaps: 0, neverHeard: 2, acknowledgedNotHeard: 2 });
  });

  it("finds an id whose event is not the stream's message of that number", () => {
    const wrong = heard(10, 11, 12, 15);
    wrong[2] = { ...wrong[2]!, id: B2 };
    expect(checkFeed(wrong, [], stream, acknowledged).mismatched).toBe(1);
  });
});

describe("cascades", () => {
  const cascade: Cascade = { bridge: B2, ports: ["p1", "p2"], traces: ["t1"], mirrors: ["m1"] };
  const deleted = (...ids: string[]): StreamEvent[] => ids.map((id, i) => ({ seq: 100 + i, event: "deleted", kind: "x", id }));

  it("are announced once per item deleted", () => {
    expect(cascadeAnnouncements(deleted(B2, "p1", "p2", "t1", "m1"), [cascade])).toEqual({ deletedTwice: 0, notAnnounced: 0 });
  });

  it("a consumer's work done twice, or not at all, is found", () => {
    expect(cascadeAnnouncements(deleted(B2, "p1", "p2", "p2", "t1", "m1"), [cascade])).toEqual({ deletedTwice: 1, notAnnounced: 0 });
    expect(cascadeAnnouncements(deleted(B2, "p1", "t1"), [cascade])).toEqual({ deletedTwice: 0, notAnnounced: 2 });
  });

  it("what is left of a deleted bridge is found, what belongs to others is not", () => {
    const left = cascadeLeftovers(
      [cascade],
      [
        { id: "p2", deviceId: B2 },
        { id: "p9", deviceId: B1 },
      ],
      [{ id: "t9", deviceId: B1 }],
      [{ id: "m1", toPortId: "p1" }],
    );
    expect([...left.bridges]).toEqual([B2]);
    expect(left.items).toEqual([`port p2 of deleted bridge ${B2}`, `mirror m1 of deleted bridge ${B2}`]);
    expect(cascadeLeftovers([cascade], [{ id: "p9", deviceId: B1 }], [], []).bridges.size).toBe(0);
  });
});
