// The cap on a user's requests under way (app.ts, InFlight) by itself: the cap holds, a place is
// given back at the second of its two ends, and the users who came and went are not kept for good.
import { describe, expect, it } from "vitest";
import { InFlight } from "./app.ts";
import type { ApiResponse } from "./context.ts";

const answer = () => ({ locals: {}, closed: false }) as unknown as ApiResponse;

/** A request of `user` handled and its answer closed: both ends of its hold. */
function through(places: InFlight, user: string): boolean {
  const res = answer();
  if (!places.enter(user, res)) return false;
  places.release(res);
  places.release(res);
  return true;
}

describe("a user's requests under way", () => {
  it("are capped, and a place comes back only at the second end of its hold", () => {
    const places = new InFlight(2);
    const [a, b] = [answer(), answer()];
    expect(places.enter("u", a)).toBe(true);
    expect(places.enter("u", b)).toBe(true);
    expect(places.enter("u", answer())).toBe(false);
    places.release(a);
    expect(places.enter("u", answer())).toBe(false);
    places.release(a);
    expect(places.enter("u", answer())).toBe(true);
    expect(places.enter("v", answer())).toBe(true);
  });

  it("keep a bounded memory of users with none under way, and never lose a busy user's count", () => {
    const places = new InFlight(2);
    const busy = answer();
    expect(places.enter("busy", busy)).toBe(true);
    for (let i = 0; i < 10_000; i++) expect(through(places, `user-${i}`)).toBe(true);
    expect(places.size).toBeLessThanOrEqual(2048);
    // The busy user still holds its place: one more fits, a second does not.
    expect(places.enter("busy", answer())).toBe(true);
    expect(places.enter("busy", answer())).toBe(false);
    // A user back at none, kept at 0 or swept, starts again from none.
    expect(through(places, "user-9999")).toBe(true);
    expect(places.enter("user-9999", answer())).toBe(true);
    expect(places.enter("user-9999", answer())).toBe(true);
    expect(places.enter("user-9999", answer())).toBe(false);
  });
});
