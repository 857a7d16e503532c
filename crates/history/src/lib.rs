#![doc = include_str!("../README.md")]

pub mod limits;
mod store;
mod writer;

pub use store::{
    Alias, AliasStore, HistoryFilter, HistoryOrder, HistoryQuery, HistoryRecord, HistoryRow,
    HistoryScope, HistoryStore, MemoryAliases, RawHistoryRow, StoreError, TextMatch, Truncated,
};
pub use writer::{History, HistoryOptions, Notice, Notify, Writer, history};
