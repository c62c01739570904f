-- Hybrid retrieval (docs/design.md §4): each turn's lexical terms, written by the service as a
-- tsvector literal (tables of its SQL, other identifiers, its question; no text-search configuration,
-- so no language). Existing turns get theirs from the re-embedding job at the next start, which
-- fills every turn whose terms are missing.
ALTER TABLE turns ADD COLUMN search_terms tsvector;
