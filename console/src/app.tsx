// The console's shell: the login form, then a header (who is logged in, the change feed's state,
// log out), the navigation (a link per top-level kind the caller may use, grouped by root
// document; child kinds are reached from their parent's page) and the page of the address.
import { useEffect, useState } from "preact/hooks";
import { endSession, type Identity, identity, login, logout, onSessionChange, SESSION_EXPIRED, sessionEndReason } from "./api.ts";
import { feedState, onFeedState, startFeed, stopFeed } from "./events.ts";
import { FormPage } from "./form.tsx";
import { ItemPage } from "./item.tsx";
import { GROUPS, KINDS, visibleTo } from "./kinds.ts";
import { ListView } from "./list.tsx";
import { TopologyPage, topologyKinds } from "./topology.tsx";
import type { ConsoleKind } from "./model.ts";
import { href, navigationCount, replaceQuery, type Route, useRoute } from "./route.ts";
import { ErrorNote, Notice, Toasts, usePage } from "./ui.tsx";

export function App() {
  const [who, setWho] = useState<Identity | undefined>(identity);
  useEffect(() => onSessionChange(() => setWho(identity())), []);
  useEffect(() => {
    if (who) startFeed();
    else stopFeed();
    // The token's expiry ends the session with a word on the login page (not a silent drop).
    if (!who) return;
    const t = setTimeout(() => endSession(SESSION_EXPIRED), Math.max(0, Math.min(who.exp * 1000 - Date.now(), 2 ** 31 - 1)));
    return () => clearTimeout(t);
  }, [who]);
  return (
    <>
      {who ? <Shell who={who} /> : <Login />}
      <Toasts />
    </>
  );
}

type Theme = "light" | "dark" | "system";
const THEME_KEY = "vnm.theme";

/** The colour scheme: the system's (prefers-color-scheme) unless the person chose one, kept in this browser. */
function applyTheme(t: Theme): void {
  if (t === "system") delete document.documentElement.dataset["theme"];
  else document.documentElement.dataset["theme"] = t;
}
const savedTheme = (): Theme => {
  const t = localStorage.getItem(THEME_KEY);
  return t === "light" || t === "dark" ? t : "system";
};
applyTheme(savedTheme());

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(savedTheme);
  const query = matchMedia("(prefers-color-scheme: dark)");
  const [systemDark, setSystemDark] = useState(query.matches);
  useEffect(() => {
    const on = () => setSystemDark(query.matches);
    query.addEventListener("change", on);
    return () => query.removeEventListener("change", on);
  }, []);
  const dark = theme === "dark" || (theme === "system" && systemDark);
  const toggle = () => {
    const next: Theme = dark ? "light" : "dark";
    localStorage.setItem(THEME_KEY, next);
    applyTheme(next);
    setTheme(next);
  };
  return (
    <button type="button" class="theme" aria-pressed={dark} onClick={toggle}>
      Dark mode
    </button>
  );
}

function Login() {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const heading = usePage("Log in");
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!(e.currentTarget instanceof HTMLFormElement)) return;
    const form = new FormData(e.currentTarget);
    setBusy(true);
    try {
      await login(String(form.get("name")), String(form.get("password")), String(form.get("tenant") ?? ""));
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <main class="login" id="main">
      <h1 tabindex={-1} ref={heading}>
        vnm console
      </h1>
      {sessionEndReason() && <Notice>{sessionEndReason()}</Notice>}
      <form onSubmit={submit}>
        <div class="field">
          <label for="login-name">User name</label>
          <input id="login-name" name="name" autocomplete="username" required />
        </div>
        <div class="field">
          <label for="login-password">Password</label>
          <input id="login-password" name="password" type="password" autocomplete="current-password" required />
        </div>
        <div class="field">
          <label for="login-tenant">Tenant (optional)</label>
          <input id="login-tenant" name="tenant" aria-describedby="login-tenant-help" />
          <p class="help" id="login-tenant-help">
            An administrator may act in one tenant's name.
          </p>
        </div>
        <ErrorNote error={error} />
        <button type="submit" class="primary" disabled={busy}>
          Log in
        </button>
      </form>
    </main>
  );
}

/** The top-level kinds a caller may use, per group (the main root document's first). */
function navigation(who: Identity): { title: string; kinds: ConsoleKind[] }[] {
  const top = [...KINDS.values()].filter((k) => !k.parent && visibleTo(k, who));
  const groups = [{ name: "", title: "Network" }, ...GROUPS];
  return groups.map((g) => ({ title: g.title, kinds: top.filter((k) => k.group === g.name) })).filter((g) => g.kinds.length > 0);
}

function Shell({ who }: { who: Identity }) {
  const route = useRoute();
  const [feed, setFeed] = useState(feedState());
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => onFeedState(setFeed), []);
  useEffect(() => setMenuOpen(false), [route]);
  const nav = navigation(who);
  const first = nav[0]?.kinds[0];
  const current = "kind" in route ? route.kind : route.page === "home" ? first?.kind : undefined;
  return (
    <>
      <button type="button" class="skip" onClick={() => document.getElementById("main")?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <span class="brand">vnm console</span>
        <span class={`feed feed-${feed}`} role="status">
          {feed === "live" ? "Live" : feed === "connecting" ? "Reconnecting…" : "Not following changes"}
        </span>
        <span class="who">
          {who.name} · {who.role.replace("_", " ")}
          {who.tenantId ? ` · tenant ${who.tenantId}` : ""}
        </span>
        <ThemeToggle />
        <button type="button" class="menu-button" aria-expanded={menuOpen} aria-controls="nav" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
        <button type="button" onClick={() => void logout()}>
          Log out
        </button>
        <button type="button" class="link logout-all" title="Ends every session of yours: other tabs, other browsers, the CLI" onClick={() => void logout(true)}>
          Log out everywhere
        </button>
      </header>
      <div class="layout">
        <nav id="nav" class={menuOpen ? "nav open" : "nav"} aria-label="Kinds">
          {topologyKinds() && (
            <ul class="nav-pages">
              <li>
                <a href={href({ page: "topology" })} aria-current={route.page === "topology" ? "page" : undefined}>
                  Topology
                </a>
              </li>
            </ul>
          )}
          {nav.map((g) => (
            <div key={g.title}>
              <h2>{g.title}</h2>
              <ul>
                {g.kinds.map((k) => (
                  <li key={k.kind}>
                    <a href={href({ page: "list", kind: k.kind })} aria-current={current === k.kind ? "page" : undefined}>
                      {k.plural}
                    </a>
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </nav>
        <main id="main" tabindex={-1}>
          <Page route={route} who={who} first={first} />
        </main>
      </div>
    </>
  );
}

function Page({ route, who, first }: { route: Route; who: Identity; first?: ConsoleKind }) {
  if (route.page === "topology") return <TopologyPage who={who} />;
  if (route.page === "missing") return <Missing />;
  const kind = "kind" in route ? KINDS.get(route.kind) : first;
  if (!kind || !visibleTo(kind, who)) return <Missing />;
  switch (route.page) {
    case "home":
    case "list":
      return <ListPage key={`${kind.kind}?${route.page === "list" ? (route.query ?? "") : ""}#${navigationCount()}`} kind={kind} who={who} query={route.page === "list" ? route.query : undefined} />;
    case "item":
      return <ItemPage key={route.path} kind={kind} who={who} path={route.path} />;
    case "new":
      return <FormPage key={`new${route.parent ?? ""}?${route.query ?? ""}`} kind={kind} who={who} parent={route.parent} query={route.query} />;
    case "edit":
      return <FormPage key={`edit${route.path}`} kind={kind} who={who} path={route.path} />;
  }
}

/** A kind's list page: its filters and sort order are the address's query (replaced as they change, so reload and back keep them). */
function ListPage({ kind, who, query }: { kind: ConsoleKind; who: Identity; query?: string }) {
  const heading = usePage(kind.plural);
  return <ListView kind={kind} who={who} heading={heading} query={query} onQuery={(q) => replaceQuery({ page: "list", kind: kind.kind, query: q || undefined })} />;
}

function Missing() {
  const heading = usePage("Not found");
  return (
    <>
      <h1 tabindex={-1} ref={heading}>
        Not found
      </h1>
      <ErrorNote error="There is no such page here, or it is not yours to see." />
      <p>
        <a href={href({ page: "home" })}>Go to the first list</a>
        {topologyKinds() && (
          <>
            {" "}
            or <a href={href({ page: "topology" })}>the topology</a>
          </>
        )}
        .
      </p>
    </>
  );
}
