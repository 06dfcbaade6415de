import { useEffect, useState } from "preact/hooks";
import { api } from "./api";
import { useRoute } from "./hooks";
import { Dashboard } from "./pages/Dashboard";
import { Settings } from "./pages/Settings";
import { Models } from "./pages/Models";
import { Runs } from "./pages/Runs";
import { Usage } from "./pages/Usage";
import { Memory } from "./pages/Memory";
import { Connect } from "./pages/Connect";
import { Outgoing } from "./pages/Outgoing";

const PAGES = [
  { id: "dashboard", title: "Dashboard", view: Dashboard },
  { id: "settings", title: "Settings", view: Settings },
  { id: "models", title: "Models & keys", view: Models },
  { id: "outgoing", title: "Outgoing", view: Outgoing },
  { id: "runs", title: "Runs & costs", view: Runs },
  { id: "usage", title: "Agent usage", view: Usage },
  { id: "memory", title: "Memory", view: Memory },
  { id: "connect", title: "Connect", view: Connect },
];

export function App() {
  const route = useRoute();
  const [backend, setBackend] = useState("");
  useEffect(() => {
    void api().then((a) => setBackend(a.kind));
  }, []);
  const page = PAGES.find((p) => p.id === route) ?? PAGES[0];
  const View = page.view;
  useEffect(() => {
    document.title = `${page.title} · Codex Free`;
  }, [page]);
  return (
    <div class="shell">
      <nav class="sidebar">
        <div class="brand">
          <img src="/favicon.png" alt="" width={24} height={24} />
          <span>Codex Free</span>
        </div>
        {PAGES.map((p) => (
          <a href={`#/${p.id}`} class={p.id === page.id ? "active" : ""} data-testid={`nav-${p.id}`}>
            {p.title}
          </a>
        ))}
        <div class="backend" data-testid="backend">{backend && `via ${backend}`}</div>
      </nav>
      <main data-testid={`page-${page.id}`}>
        <h1>{page.title}</h1>
        <View />
      </main>
    </div>
  );
}
