//! Shared by the simulator's integration tests that run a JSON config and read its tables
//! (`abr.rs`, `gcc.rs`); each test binary uses only some of these.
#![allow(dead_code)]

use aqmlab_model::record::{Column, Table};
use aqmlab_sim::{config, Simulation};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU64};

/// Runs a simulator config to its end, checks the network's invariants and returns the records.
pub fn run(v: Value) -> Vec<(&'static str, Table)> {
    let cfg = config::parse(&v.to_string()).expect("valid config");
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run(&AtomicBool::new(false), &AtomicU64::new(0)).unwrap();
    sim.check_invariants().unwrap();
    sim.take_records().0
}

/// Column `name` of table `table`; panics naming what is missing.
pub fn column<'a>(tables: &'a [(&'static str, Table)], table: &str, name: &str) -> &'a Column {
    let t = &tables.iter().find(|(n, _)| *n == table).unwrap_or_else(|| panic!("no table {table}")).1;
    &t.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no column {table}.{name}")).1
}

pub fn u8s(c: &Column) -> Vec<u8> {
    match c {
        Column::U8(v) => v.clone(),
        _ => panic!("not u8"),
    }
}

pub fn u32s(c: &Column) -> Vec<u32> {
    match c {
        Column::U32(v) => v.clone(),
        _ => panic!("not u32"),
    }
}

pub fn u64s(c: &Column) -> Vec<u64> {
    match c {
        Column::U64(v) => v.clone(),
        _ => panic!("not u64"),
    }
}

pub fn f64s(c: &Column) -> Vec<f64> {
    match c {
        Column::F64(v) => v.clone(),
        _ => panic!("not f64"),
    }
}
