//! Integration tests: whole fetches against a real TLS server on loopback.

mod fetch;
