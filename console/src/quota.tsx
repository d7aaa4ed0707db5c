// What a tenant's quota page shows besides its fields (issue 54): each kind the tenant creates,
// what it holds against its limit, as a table with a meter per row (full rows marked). Read again
// when the quota changes (the item page reloads it) and when any item is created or deleted, since
// the usage is other kinds' items.
import { useEffect, useState } from "preact/hooks";
import { call } from "./api.ts";
import { onChange } from "./events.ts";
import { ErrorNote } from "./ui.tsx";

export const QUOTA_KIND = "quota.Quota";

type Counts = Record<string, number>;

const numbers = (v: unknown): Counts => (v && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([, n]) => typeof n === "number")) : {});

/** A row's words: "3 of 5", "3 (unlimited)", "7 of 5: over the limit". */
export function usageWords(used: number, limit: number): string {
  if (limit < 0) return `${used} (unlimited)`;
  if (used > limit) return `${used} of ${limit}: over the limit`;
  return used === limit ? `${used} of ${limit}: full` : `${used} of ${limit}`;
}

// biome-ignore lint/suspicious/noExplicitAny: the quota as the API gives it
export function QuotaUsage({ path, item }: { path: string; item: any }) {
  const [quota, setQuota] = useState<{ limits: Counts; used: Counts }>({ limits: numbers(item.limits), used: numbers(item.used) });
  const [error, setError] = useState<unknown>();
  useEffect(() => setQuota({ limits: numbers(item.limits), used: numbers(item.used) }), [item]);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = onChange((c) => {
      if ((c.event !== "created" && c.event !== "deleted" && c.event !== "resync") || timer) return;
      // A burst of creates is read once.
      timer = setTimeout(() => {
        timer = undefined;
        call("GET", path).then(
          (a) => {
            // biome-ignore lint/suspicious/noExplicitAny: the quota as the API gives it
            const body = a.body as any;
            setQuota({ limits: numbers(body?.limits), used: numbers(body?.used) });
            setError(undefined);
          },
          setError,
        );
      }, 300);
    });
    return () => {
      off();
      clearTimeout(timer);
    };
  }, [path]);
  const rows = Object.keys(quota.limits).sort();
  return (
    <div class="list">
      <div class="list-head">
        <h2 id="quota-usage">Usage against limits</h2>
      </div>
      <ErrorNote error={error} />
      <section class="table-wrap" tabindex={0} aria-labelledby="quota-usage">
        <table class="quota-usage">
          <thead>
            <tr>
              <th scope="col">Collection</th>
              <th scope="col">Used</th>
              <th scope="col">Limit</th>
              <th scope="col">Usage</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => {
              const used = quota.used[c] ?? 0;
              const limit = quota.limits[c] ?? -1;
              const full = limit >= 0 && used >= limit;
              return (
                <tr key={c} class={full ? "quota-full" : undefined} data-collection={c}>
                  <th scope="row" data-label="Collection">
                    {c}
                  </th>
                  <td data-label="Used">{used}</td>
                  <td data-label="Limit">{limit < 0 ? "unlimited" : limit}</td>
                  <td data-label="Usage">
                    {limit > 0 && <meter min={0} max={limit} value={Math.min(used, limit)} high={limit * 0.8} optimum={0} aria-label={`${c}: ${usageWords(used, limit)}`} />}{" "}
                    {usageWords(used, limit)}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
    </div>
  );
}
