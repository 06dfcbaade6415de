import { defineConfig } from "vite";

// Preact through esbuild's automatic JSX runtime (no Babel preset needed).
// `npm run dev` proxies /api and /login to a running `codex-free serve --http --ui`
// (CODEX_FREE_URL): open http://localhost:5173/login?code=... with a code from
// `codex-free token login` so the session cookie is set on the dev origin.
export default defineConfig({
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  resolve: { alias: { react: "preact/compat", "react-dom": "preact/compat" } },
  build: { outDir: "dist", emptyOutDir: true, target: "es2020", chunkSizeWarningLimit: 600 },
  server: {
    proxy: {
      "/api": process.env.CODEX_FREE_URL ?? "http://127.0.0.1:3000",
      "/login": process.env.CODEX_FREE_URL ?? "http://127.0.0.1:3000",
    },
  },
  test: { environment: "jsdom", include: ["src/**/*.test.ts"] },
} as any);
