import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import { KEY_SORTS, MAX_PAGE, MAX_SEARCH_CHARS } from "../../data/usage/model.ts";
import { query } from "./components.ts";

/** The keys table's state as the URL carries it. */
export interface KeysFilter {
  q: string;
  status: "all" | "active" | "revoked";
  sort: (typeof KEY_SORTS)[number];
  order: "asc" | "desc";
  page: number;
}

/**
 * The keys table's state read from a query string: anything unknown falls back on its default, so
 * the values a key page carries back to the list are only ever ones the list itself accepts.
 */
export function keysFilter(q: Record<string, string | undefined>): KeysFilter {
  return {
    q: (q.q ?? "").trim().slice(0, MAX_SEARCH_CHARS),
    status: q.status === "active" || q.status === "revoked" ? q.status : "all",
    sort: KEY_SORTS.find((s) => s === q.sort) ?? "created",
    order: q.order === "asc" ? "asc" : "desc",
    page: pageNumber(q.page),
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
  };
}

/** The href of the keys list for a filter. */
export function keysHref(f: KeysFilter): string {
  return `${INTERNAL_PREFIX}/keys${query(keysFilterParams(f))}`;
}

/** A dashboard page number: a whole number from 1 to MAX_PAGE, else 1. */
export function pageNumber(raw: string | undefined): number {
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 1 && n <= MAX_PAGE ? n : 1;
}
