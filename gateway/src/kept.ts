// What the gateway derives from a body the cache keeps (its gzip coding, its parts, the string it
// is written as): made once per copy and kept as long as the copy lives, since a kept body is
// sent again and again.

/** `make` of a kept body, made on first use and kept with the body (a WeakMap: it goes with it). */
export function perCopy<T>(make: (body: Buffer) => T): (body: Buffer) => T {
  const made = new WeakMap<Buffer, T>();
  return (body) => {
    let v = made.get(body);
    if (v === undefined) {
      v = make(body);
      made.set(body, v);
    }
    return v;
  };
}
