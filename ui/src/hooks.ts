import { useCallback, useEffect, useState } from "preact/hooks";
import { api, toFailure } from "./api";
import type { Api, ApiFailure } from "./api";

/** Load data from the API; `reload` repeats the call. */
export function useLoad<T>(fn: (a: Api) => Promise<T>, deps: unknown[] = []) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  const [loading, setLoading] = useState(true);
  const reload = useCallback(async () => {
    setLoading(true);
    try {
      setData(await fn(await api()));
      setError(null);
    } catch (e) {
      setError(toFailure(e));
    } finally {
      setLoading(false);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, loading, reload, setData };
}

/** Current hash route (`#/settings` → "settings"). */
export function useRoute(): string {
  const get = () => location.hash.replace(/^#\/?/, "").split(/[?&]/)[0] || "dashboard";
  const [route, setRoute] = useState(get);
  useEffect(() => {
    const on = () => setRoute(get());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}
