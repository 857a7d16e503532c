#![doc = include_str!("../README.md")]

pub mod adapters;
pub mod commands;
pub mod config;
pub mod console;
pub mod discovery;
pub mod doctor;
pub mod logging;
pub mod serve;
