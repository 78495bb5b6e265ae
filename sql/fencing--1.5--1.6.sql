-- fencing 1.5 -> 1.6
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.6'" to load this file. \quit

-- Each section below belongs to one change; sections are appended, never
-- interleaved, so that independent changes merge cleanly.
