import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import { API_KEY_PREFIX, KEY_BODY_CHARS, keyPrefixOf, SECRET_KEY_PREFIX } from "../../data/keys/service.ts";
import { KEY_SORTS, MAX_PAGE, MAX_SEARCH_CHARS } from "../../data/usage/model.ts";
import { query } from "./components.ts";
import { RANGES, type RangeName } from "./ranges.ts";

/** The keys table's ranges: those of the overview, and all time (the keys' cumulative counters). */
export type KeysPeriod = RangeName | "all";

/** The keys table's state as the URL carries it. */
export interface KeysFilter {
  q: string;
  status: "all" | "active" | "revoked";
  sort: (typeof KEY_SORTS)[number];
  order: "asc" | "desc";
  page: number;
  /** The range of the figure columns and their sorts. */
  period: KeysPeriod;
}

/**
 * The keys table's state read from a query string: anything unknown falls back on its default, so
 * the values a key page carries back to the list are only ever ones the list itself accepts.
 */
export function keysFilter(q: Record<string, string | undefined>): KeysFilter {
  const search = (q.q ?? "").trim().slice(0, MAX_SEARCH_CHARS);
  return {
    // A pasted credential never travels on, whichever page the URL that carries it opens.
    q: searchInsteadOfCredential(search)?.q ?? search,
    status: q.status === "active" || q.status === "revoked" ? q.status : "all",
    sort: KEY_SORTS.find((s) => s === q.sort) ?? "created",
    order: q.order === "asc" ? "asc" : "desc",
    page: pageNumber(q.page),
    period: q.period !== undefined && Object.hasOwn(RANGES, q.period) ? (q.period as RangeName) : "all",
  };
}

/** The filter as query parameters, defaults left out (so an unfiltered list adds nothing to a link). */
export function keysFilterParams(f: KeysFilter): Record<string, string | number | null> {
  return {
    q: f.q || null,
    status: f.status === "all" ? null : f.status,
    sort: f.sort === "created" ? null : f.sort,
    order: f.order === "desc" ? null : f.order,
    page: f.page === 1 ? null : f.page,
    period: f.period === "all" ? null : f.period,
  };
}

/** The href of the keys list for a filter, with one of the list's fixed notices (`done`) if given. */
export function keysHref(f: KeysFilter, done?: string): string {
  return `${INTERNAL_PREFIX}/keys${query({ ...keysFilterParams(f), done })}`;
}

/** A dashboard page number: a whole number from 1 to MAX_PAGE, else 1. */
export function pageNumber(raw: string | undefined): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 1 && n <= MAX_PAGE ? n : 1;
}

// A whole api_key, and anything with a run of a secret_key in it (half a pasted secret is still half a secret).
const WHOLE_API_KEY = new RegExp(`^${API_KEY_PREFIX}[A-Za-z0-9_-]{${KEY_BODY_CHARS}}$`);
const SECRET_KEY_PART = new RegExp(`${SECRET_KEY_PREFIX}[A-Za-z0-9_-]{16,}`);

/**
 * What a keys search that was a pasted credential is searched by instead: nothing for a secret key
 * (it must not reach the page or a URL again), the key prefix for a whole API key; null for any
 * other search, searched as typed.
 */
export function searchInsteadOfCredential(search: string): { q: string; done: string } | null {
  const typed = search.trim();
  if (SECRET_KEY_PART.test(typed)) return { q: "", done: "secret-not-searched" };
  if (WHOLE_API_KEY.test(typed)) return { q: keyPrefixOf(typed), done: "api-key-by-prefix" };
  return null;
}
