//! Record I/O in Rust for the Python side's readers and writers: the strict CSV/TSV parser (`csv_records`) and
//! the formatting of `score`'s output rows (`score_rows`).

mod byte_scan;
pub mod csv_records;
pub mod score_rows;
