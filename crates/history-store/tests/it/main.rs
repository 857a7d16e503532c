//! The history store at its boundary: one suite run against a real PostgreSQL
//! (127.0.0.1:5432, database `test`, a fresh schema per test, dropped afterwards) and a
//! temporary SQLite file, plus what only one backend has (timeouts, outages, upstream
//! tables).

mod fixture;
mod postgres;
mod sqlite;
mod suite;
