//! A strict CSV/TSV record parser over bytes, fed block by block: the reader behind
//! python/jeirt_lite/_io/records.py `CsvRecords`, so that `score` parses its input without holding the GIL.
//!
//! It reproduces, byte for byte, what the project's earlier reader got from Python's `csv` module
//! (`csv.reader(text, delimiter=d, strict=True)` over the file decoded as UTF-8 with `surrogateescape`, opened
//! with `newline=""`): the same records, the same blank lines (a run of them as one item), the same line numbers
//! (`reader.line_num`) and
//! the same two errors, with their texts. tests/test_csv_records.py checks it against that reader on generated
//! and hostile files. What it mirrors:
//!
//! - lines end after `\n`, after `\r\n` or after a lone `\r` (universal newlines, untranslated), and the state
//!   machine of CPython's `_csv.c` sees each line's characters and then an end-of-line mark;
//! - the excel dialect: `"` quotes, `""` inside quotes is one `"`, a quote inside an unquoted field is a plain
//!   character, no escape character, no initial-space skipping; in strict mode a character other than the
//!   delimiter or a line end after a closing quote is an error, and so is the end of the file inside quotes;
//! - the bytes that are special (delimiter, quote, CR, LF) are ASCII, and a UTF-8 sequence never contains an
//!   ASCII byte, so parsing bytes splits records exactly where parsing the decoded text does; a field is then
//!   valid UTF-8 exactly when the decoded field holds no escaped byte.
//!
//! One thing it adds: a record longer than the bound it is made with is an error too (`TOO_LONG`), found as
//! soon as the bound is passed, so that an endless record (a quote never closed on a pipe) ends the file rather
//! than every byte after it being held.

use std::collections::VecDeque;

use super::byte_scan::position_of_any3;

/// One item of the file after its header: a record (its fields' bytes), a blank line, or the error that ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A record: the fields' bytes concatenated, each field's end offset, and the line it ends on.
    Record {
        bytes: Vec<u8>,
        ends: Vec<usize>,
        line: u64,
    },
    /// A blank line (the `csv` module yields `[]` for it), with its line number.
    Blank { line: u64 },
    /// A malformed record: `csv.Error`'s text and the line number when it was raised.
    Error { message: String, line: u64 },
}

impl Item {
    /// The line the item ends on (for an error: where it was found).
    pub fn line(&self) -> u64 {
        match self {
            Item::Record { line, .. } | Item::Blank { line } | Item::Error { line, .. } => *line,
        }
    }

    /// The fields of a record as byte slices (none for the other items).
    pub fn fields(&self) -> Vec<&[u8]> {
        match self {
            Item::Record { bytes, ends, .. } => {
                let mut start = 0;
                ends.iter()
                    .map(|&end| {
                        let field = bytes.get(start..end).unwrap_or(&[]);
                        start = end;
                        field
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    StartRecord,
    StartField,
    InField,
    InQuotedField,
    QuoteInQuotedField,
    EatCrnl,
}

/// What the state machine is given: a byte of the line, or the end of the line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Input {
    Byte(u8),
    EndOfLine,
}

const QUOTE: u8 = b'"';

/// How the error of a record longer than the bound begins (the Python side tells it from the others by it).
pub const TOO_LONG: &str = "record longer than";

/// The streaming parser: `feed` blocks of bytes, `finish` at the end of the file, `pop` parsed items.
#[derive(Debug)]
pub struct CsvParser {
    delimiter: u8,
    /// The most bytes a record may span, from its first byte to its last before the line end that ends it.
    max_record_bytes: u64,
    /// Bytes fed so far, the current block's included.
    fed: u64,
    /// Where in the file the line end `push_byte` last handled is, and where the current record began.
    pos: u64,
    record_start: u64,
    state: State,
    bytes: Vec<u8>,
    ends: Vec<usize>,
    line_num: u64,
    at_line_start: bool,
    after_cr: bool,
    failed: bool,
    finished: bool,
    items: VecDeque<Item>,
    records_ready: usize,
}

impl CsvParser {
    /// A parser for fields separated by `delimiter` (`,` or `\t`), refusing a record longer than
    /// `max_record_bytes` (its line ends inside quotes counted, the one ending it not).
    pub fn new(delimiter: u8, max_record_bytes: u64) -> Self {
        Self {
            delimiter,
            max_record_bytes,
            fed: 0,
            pos: 0,
            record_start: 0,
            state: State::StartRecord,
            bytes: Vec::new(),
            ends: Vec::new(),
            line_num: 0,
            at_line_start: true,
            after_cr: false,
            failed: false,
            finished: false,
            items: VecDeque::new(),
            records_ready: 0,
        }
    }

    /// Records and errors parsed and not yet popped (blank lines not counted).
    pub fn records_ready(&self) -> usize {
        self.records_ready
    }

    /// Whether any item (a blank line too) is parsed and not yet popped.
    pub fn has_item(&self) -> bool {
        !self.items.is_empty()
    }

    /// Whether nothing more will come: the end of the file was seen, or an error ended it.
    pub fn done(&self) -> bool {
        self.finished || self.failed
    }

    /// The next parsed item, if any.
    pub fn pop(&mut self) -> Option<Item> {
        let item = self.items.pop_front()?;
        if !matches!(item, Item::Blank { .. }) {
            self.records_ready -= 1;
        }
        Some(item)
    }

    /// Parse a block of the file (after any byte-order mark). Nothing is parsed after an error.
    pub fn feed(&mut self, block: &[u8]) {
        self.fed += block.len() as u64;
        let mut rest = block;
        while let Some((&byte, after)) = rest.split_first() {
            if self.failed {
                return;
            }
            // Inside a field, the bytes up to the next one that matters are copied at once.
            let run = self.ordinary_run(rest);
            if run > 0 {
                let (ordinary, after_run) = rest.split_at(run);
                self.bytes.extend_from_slice(ordinary);
                rest = after_run;
                continue;
            }
            self.push_byte(byte, rest.len());
            rest = after;
        }
        // A record still open past the bound: checked once a block, so at most a block more is held.
        let open = !matches!(self.state, State::StartRecord | State::EatCrnl);
        if open && !self.failed && self.fed - self.record_start > self.max_record_bytes {
            self.fail_too_long();
        }
    }

    /// How many leading bytes of `block` only extend the current field (none outside a field or at a line's
    /// first byte, which the slow path counts).
    fn ordinary_run(&self, block: &[u8]) -> usize {
        if self.after_cr || self.at_line_start {
            return 0;
        }
        let stop = match self.state {
            State::InField => self.delimiter,
            State::InQuotedField => QUOTE,
            _ => return 0,
        };
        position_of_any3(block, stop, b'\n', b'\r')
    }

    /// One byte outside an ordinary run, `remaining` bytes before the end of what was fed. Its position is worked
    /// out only where a record starts or may end: these bytes are the parser's slow path.
    fn push_byte(&mut self, byte: u8, remaining: usize) {
        if self.after_cr {
            self.after_cr = false;
            if byte == b'\n' {
                self.step(Input::Byte(byte));
                self.end_line();
                return;
            }
            self.end_line();
        }
        if self.at_line_start {
            self.line_num += 1;
            self.at_line_start = false;
            if self.state == State::StartRecord {
                self.record_start = self.fed - remaining as u64;
            }
        }
        match byte {
            b'\n' | b'\r' => {
                self.pos = self.fed - remaining as u64; // where a record ending here ends
                self.step(Input::Byte(byte));
                if byte == b'\n' {
                    self.end_line();
                } else {
                    self.after_cr = true;
                }
            }
            _ => self.step(Input::Byte(byte)),
        }
    }

    /// The end of the file: the last line (without a line end) is complete; inside quotes it is an error.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        if !self.failed && (self.after_cr || !self.at_line_start) {
            self.after_cr = false;
            self.end_line();
        }
        // CPython also fails on a field left unsaved (field_len != 0), which only an escape character leaves in
        // the excel dialect's states: every other state saves or drops the field at the end of a line.
        if !self.failed && self.state == State::InQuotedField {
            self.fail("unexpected end of data".to_string());
        }
        self.finished = true;
    }

    fn end_line(&mut self) {
        if !self.failed {
            self.step(Input::EndOfLine);
        }
        self.at_line_start = true;
    }

    fn fail(&mut self, message: String) {
        self.failed = true;
        self.items.push_back(Item::Error {
            message,
            line: self.line_num,
        });
        self.records_ready += 1;
    }

    fn fail_too_long(&mut self) {
        self.fail(format!("{TOO_LONG} {} bytes", self.max_record_bytes));
    }

    fn save_field(&mut self) {
        self.ends.push(self.bytes.len());
    }

    /// A line end after a field: the record is complete at the end of the line, else wait for it.
    fn end_record_at(&mut self, input: Input) {
        // Its last byte is the one before this line end (the file's end: the last byte fed).
        let end = if input == Input::EndOfLine {
            self.fed
        } else {
            self.pos
        };
        if end - self.record_start > self.max_record_bytes {
            return self.fail_too_long();
        }
        self.save_field();
        if input == Input::EndOfLine {
            self.emit();
        } else {
            self.state = State::EatCrnl;
        }
    }

    fn emit(&mut self) {
        self.state = State::StartRecord;
        let line = self.line_num;
        if self.ends.is_empty() {
            // A run of blank lines is one item, with the run's last line: a reader needs only where the next row
            // starts, and a file or pipe of blank lines alone (`yes ''`) then holds one item, not one per line.
            if let Some(Item::Blank { line: last }) = self.items.back_mut() {
                *last = line;
            } else {
                self.items.push_back(Item::Blank { line });
            }
            return;
        }
        self.items.push_back(Item::Record {
            bytes: std::mem::take(&mut self.bytes),
            ends: std::mem::take(&mut self.ends),
            line,
        });
        self.records_ready += 1;
    }

    /// One step of CPython's `parse_process_char` for the excel dialect in strict mode.
    fn step(&mut self, input: Input) {
        let is_line_end = matches!(input, Input::EndOfLine | Input::Byte(b'\n' | b'\r'));
        match self.state {
            State::StartRecord => {
                if input == Input::EndOfLine {
                    self.emit();
                } else if is_line_end {
                    self.state = State::EatCrnl;
                } else {
                    self.state = State::StartField;
                    self.start_field(input, is_line_end);
                }
            }
            State::StartField => self.start_field(input, is_line_end),
            State::InField => match input {
                _ if is_line_end => self.end_record_at(input),
                Input::Byte(byte) if byte == self.delimiter => {
                    self.save_field();
                    self.state = State::StartField;
                }
                Input::Byte(byte) => self.bytes.push(byte),
                Input::EndOfLine => {}
            },
            State::InQuotedField => match input {
                Input::EndOfLine => {}
                Input::Byte(QUOTE) => self.state = State::QuoteInQuotedField,
                Input::Byte(byte) => self.bytes.push(byte),
            },
            State::QuoteInQuotedField => match input {
                Input::Byte(QUOTE) => {
                    self.bytes.push(QUOTE);
                    self.state = State::InQuotedField;
                }
                Input::Byte(byte) if byte == self.delimiter => {
                    self.save_field();
                    self.state = State::StartField;
                }
                _ if is_line_end => self.end_record_at(input),
                Input::Byte(_) | Input::EndOfLine => self.fail(format!(
                    "'{}' expected after '\"'",
                    char::from(self.delimiter)
                )),
            },
            State::EatCrnl => match input {
                Input::EndOfLine => self.emit(),
                _ if is_line_end => {}
                Input::Byte(_) => self.fail(
                    "new-line character seen in unquoted field - do you need to open the file with \
                     newline=''?"
                        .to_string(),
                ),
            },
        }
    }

    fn start_field(&mut self, input: Input, is_line_end: bool) {
        match input {
            _ if is_line_end => self.end_record_at(input),
            Input::Byte(QUOTE) => self.state = State::InQuotedField,
            Input::Byte(byte) if byte == self.delimiter => self.save_field(),
            Input::Byte(byte) => {
                self.bytes.push(byte);
                self.state = State::InField;
            }
            Input::EndOfLine => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every item of `data` fed in blocks of `block` bytes, as (fields, line) with fields as strings,
    /// blank lines as `None`, errors as `[message]`.
    fn items(data: &[u8], block: usize) -> Vec<(Option<Vec<String>>, u64)> {
        bounded_items(data, block, u64::MAX)
    }

    /// `items` from a parser refusing records longer than `max_record_bytes`.
    fn bounded_items(
        data: &[u8],
        block: usize,
        max_record_bytes: u64,
    ) -> Vec<(Option<Vec<String>>, u64)> {
        let mut parser = CsvParser::new(b',', max_record_bytes);
        for piece in data.chunks(block) {
            parser.feed(piece);
        }
        parser.finish();
        let mut out = Vec::new();
        while let Some(item) = parser.pop() {
            let fields = match &item {
                Item::Blank { .. } => None,
                Item::Error { message, .. } => Some(vec![message.clone()]),
                Item::Record { .. } => Some(
                    item.fields()
                        .iter()
                        .map(|f| String::from_utf8_lossy(f).into_owned())
                        .collect(),
                ),
            };
            out.push((fields, item.line()));
        }
        out
    }

    fn record(fields: &[&str], line: u64) -> (Option<Vec<String>>, u64) {
        (Some(fields.iter().map(|f| f.to_string()).collect()), line)
    }

    #[test]
    fn every_line_end_ends_a_line_and_quotes_keep_theirs() {
        let data = b"a,b\r\n\"x\ry\",\"q\"\"\"\r\rlast";
        for block in [1, 2, 3, 100] {
            assert_eq!(
                items(data, block),
                vec![
                    record(&["a", "b"], 1),
                    record(&["x\ry", "q\""], 3),
                    (None, 4),
                    record(&["last"], 5),
                ],
                "block {block}"
            );
        }
    }

    #[test]
    fn a_quote_never_closed_and_text_after_a_closing_quote_are_errors_where_the_csv_module_sees_them(
    ) {
        assert_eq!(
            items(b"a\n\"open\nmore\n", 2),
            vec![
                record(&["a"], 1),
                (Some(vec!["unexpected end of data".to_string()]), 3)
            ]
        );
        assert_eq!(
            items(b"a\n\"closed\"x,y\nb\n", 4),
            vec![
                record(&["a"], 1),
                (Some(vec!["',' expected after '\"'".to_string()]), 2)
            ]
        );
    }

    #[test]
    fn the_counters_count_records_and_errors_and_pop_hands_out_blank_lines_too() {
        let mut parser = CsvParser::new(b',', u64::MAX);
        assert!(!parser.has_item() && !parser.done());
        parser.feed(b"a,b\n\nc\n");
        assert_eq!(parser.records_ready(), 2);
        assert!(parser.has_item() && !parser.done());
        let mut ready = Vec::new();
        while let Some(item) = parser.pop() {
            ready.push((item.line(), parser.records_ready()));
        }
        assert_eq!(ready, vec![(1, 1), (2, 1), (3, 0)]);
        assert!(!parser.has_item() && !parser.done());
        parser.finish();
        assert!(parser.done() && !parser.has_item());
        parser.finish();
        assert!(!parser.has_item(), "a second finish adds nothing");
    }

    #[test]
    fn an_error_counts_as_ready_ends_the_file_and_nothing_after_it_is_parsed() {
        let mut parser = CsvParser::new(b'\t', u64::MAX);
        parser.feed(b"a\tb\n\"x\"y\n");
        assert!(
            parser.done(),
            "done before finish: the error ended the file"
        );
        assert_eq!(parser.records_ready(), 2);
        parser.feed(b"c\n");
        parser.finish();
        assert_eq!(parser.records_ready(), 2);
        assert_eq!(parser.pop().map(|item| item.line()), Some(1));
        assert_eq!(
            parser.pop(),
            Some(Item::Error {
                message: "'\t' expected after '\"'".to_string(),
                line: 2
            })
        );
        assert_eq!((parser.pop(), parser.records_ready()), (None, 0));
    }

    #[test]
    fn a_quoted_field_open_at_the_end_of_the_file_is_an_error_on_the_file_s_last_line() {
        let end = |line| (Some(vec!["unexpected end of data".to_string()]), line);
        for block in [1, 2, 100] {
            assert_eq!(items(b"\"a\nb", block), vec![end(2)], "block {block}");
            assert_eq!(items(b"a\n\"", block), vec![record(&["a"], 1), end(2)]);
            assert_eq!(items(b"x,\"\r\n\r", block), vec![end(2)]);
            assert_eq!(items(b"\"a\"\"", block), vec![end(1)]);
        }
    }

    #[test]
    fn empty_fields_between_and_after_delimiters_are_kept() {
        for block in [1, 2, 100] {
            assert_eq!(
                items(b"a,,b\nc,\n,\r\n", block),
                vec![
                    record(&["a", "", "b"], 1),
                    record(&["c", ""], 2),
                    record(&["", ""], 3)
                ],
                "block {block}"
            );
        }
    }

    #[test]
    fn a_run_of_blank_lines_is_one_item_with_its_last_line_however_it_is_fed() {
        for block in [1, 2, 3, 100] {
            assert_eq!(
                items(b"a\n\n\r\n\rb\n\n", block),
                vec![record(&["a"], 1), (None, 4), record(&["b"], 5), (None, 6)],
                "block {block}"
            );
        }
        let mut parser = CsvParser::new(b',', u64::MAX);
        for _ in 0..1000 {
            parser.feed(&[b'\n'; 1000]);
        }
        assert_eq!(
            parser.items.len(),
            1,
            "a million blank lines are held as one item"
        );
    }

    #[test]
    fn a_quote_inside_an_unquoted_field_is_a_plain_character() {
        assert_eq!(items(b"ab\"c,d\n", 1), vec![record(&["ab\"c", "d"], 1)]);
    }

    #[test]
    fn a_record_at_the_bound_is_read_and_one_byte_more_is_an_error_on_the_line_reading_stopped() {
        let too_long = |line| (Some(vec![format!("{TOO_LONG} 5 bytes")]), line);
        for block in [1, 2, 3, 100] {
            // Five bytes with either line end, a quoted line end inside, or none at the end of the file.
            let exact: &[&[u8]] = &[b"ab,cd\nx\n", b"ab,cd\r\nx", b"\"a\nb\"\rx", b"x\nabcde"];
            for data in exact {
                assert!(
                    !bounded_items(data, block, 5)
                        .iter()
                        .any(|(fields, _)| fields
                            .as_ref()
                            .is_some_and(|f| f[0].starts_with(TOO_LONG))),
                    "{data:?} block {block}"
                );
            }
            assert_eq!(
                bounded_items(b"x\nab,cde\ny\n", block, 5),
                vec![record(&["x"], 1), too_long(2)]
            );
            assert_eq!(
                bounded_items(b"x\nabcdef", block, 5),
                vec![record(&["x"], 1), too_long(2)]
            );
            assert_eq!(
                bounded_items(b"\"a\n\nbcd\"\n", block, 5),
                vec![too_long(3)]
            );
        }
    }

    #[test]
    fn an_endless_quoted_value_is_refused_once_a_block_passes_the_bound() {
        let mut parser = CsvParser::new(b',', 10);
        parser.feed(b"a\n\"");
        let endless = [b'x'; 4];
        let mut blocks = 0;
        while !parser.done() {
            parser.feed(&endless);
            blocks += 1;
            assert!(blocks < 10, "read on past the bound");
        }
        assert_eq!(parser.records_ready(), 2);
        assert_eq!(parser.pop().map(|item| item.line()), Some(1));
        assert_eq!(
            parser.pop(),
            Some(Item::Error {
                message: format!("{TOO_LONG} 10 bytes"),
                line: 2
            })
        );
    }
}
