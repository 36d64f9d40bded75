//! WordPiece as Hugging Face `tokenizers` does it: greedy longest-match-first over the vocabulary, the pieces
//! after the first carrying the continuation prefix (`##`), a word with an unmatched remainder or longer than
//! `max_input_chars_per_word` characters becoming one unknown token.
//!
//! The vocabulary is a byte trie. A continuation piece `##xyz` is looked up by walking from the node of the
//! prefix `##`, so one walk per piece finds its longest match, whatever the vocabulary.

/// A node's outgoing edges: `edges[start..start + len]`, sorted by byte.
#[derive(Debug, Clone, Copy)]
struct Node {
    start: u32,
    len: u16,
    /// Vocabulary id of the string that ends here, or `NO_ID`.
    id: u32,
}

const NO_ID: u32 = u32::MAX;

/// Why a vocabulary cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VocabError {
    Duplicate(String),
    Empty,
}

/// The vocabulary as a trie, with the WordPiece settings.
#[derive(Debug, Clone)]
pub struct WordPiece {
    nodes: Vec<Node>,
    edges: Vec<(u8, u32)>,
    /// The node reached by the continuation prefix (where continuation pieces start), if the vocabulary
    /// has any entry beginning with it.
    continuation: Option<u32>,
    unk_id: u32,
    max_chars: usize,
}

/// Children of a node while building: sorted by byte.
type Children = Vec<(u8, u32)>;

impl WordPiece {
    /// Builds the trie from `(token, id)` pairs.
    pub fn new(
        vocab: &[(String, u32)],
        unk_id: u32,
        continuation_prefix: &str,
        max_chars: usize,
    ) -> Result<Self, VocabError> {
        if vocab.is_empty() {
            return Err(VocabError::Empty);
        }
        // Build with per-node child lists, then flatten into one sorted edge array.
        let mut children: Vec<Children> = vec![Vec::new()];
        let mut ids: Vec<u32> = vec![NO_ID];
        for (token, id) in vocab {
            let mut node = 0usize;
            for &b in token.as_bytes() {
                let list = &children[node];
                node = match list.binary_search_by_key(&b, |&(byte, _)| byte) {
                    Ok(pos) => list[pos].1 as usize,
                    Err(pos) => {
                        let next = children.len();
                        children[node].insert(pos, (b, next as u32));
                        children.push(Vec::new());
                        ids.push(NO_ID);
                        next
                    }
                };
            }
            if ids[node] != NO_ID || node == 0 {
                return Err(VocabError::Duplicate(token.clone()));
            }
            ids[node] = *id;
        }
        let mut nodes = Vec::with_capacity(children.len());
        let mut edges = Vec::with_capacity(children.len());
        for (list, &id) in children.iter().zip(&ids) {
            nodes.push(Node {
                start: edges.len() as u32,
                len: list.len() as u16,
                id,
            });
            edges.extend_from_slice(list);
        }
        let mut trie = Self {
            nodes,
            edges,
            continuation: None,
            unk_id,
            max_chars,
        };
        trie.continuation = trie.walk(0, continuation_prefix.as_bytes());
        Ok(trie)
    }

    /// The child of `node` along byte `b`.
    #[inline(always)]
    fn child(&self, node: u32, b: u8) -> Option<u32> {
        let n = self.nodes.get(node as usize)?;
        let edges = self
            .edges
            .get(n.start as usize..n.start as usize + usize::from(n.len))?;
        if edges.len() <= 8 {
            edges.iter().find(|&&(byte, _)| byte == b).map(|&(_, c)| c)
        } else {
            edges
                .binary_search_by_key(&b, |&(byte, _)| byte)
                .ok()
                .and_then(|pos| edges.get(pos))
                .map(|&(_, c)| c)
        }
    }

    fn walk(&self, mut node: u32, bytes: &[u8]) -> Option<u32> {
        for &b in bytes {
            node = self.child(node, b)?;
        }
        Some(node)
    }

    /// The longest vocabulary entry that `bytes` starts with, from `start` node: `(id, length in bytes)`.
    #[inline(always)]
    fn longest(&self, start: u32, bytes: &[u8]) -> Option<(u32, usize)> {
        let mut node = start;
        let mut best = None;
        for (i, &b) in bytes.iter().enumerate() {
            match self.child(node, b) {
                Some(next) => node = next,
                None => break,
            }
            let id = self.nodes.get(node as usize).map_or(NO_ID, |n| n.id);
            if id != NO_ID {
                best = Some((id, i + 1));
            }
        }
        best
    }

    /// Appends the pieces of `word` (valid UTF-8, one pre-token) to `out`, at most `limit` ids in all.
    pub fn tokenize(&self, word: &[u8], out: &mut Vec<u32>, limit: usize) {
        let chars = word.iter().filter(|&&b| (b & 0xC0) != 0x80).count();
        let first_piece = out.len();
        if chars <= self.max_chars {
            let mut start = 0;
            let mut node = 0;
            while let Some(rest) = word.get(start..).filter(|r| !r.is_empty()) {
                let Some((id, len)) = self.longest(node, rest) else {
                    break;
                };
                if out.len() < limit {
                    out.push(id);
                }
                start += len;
                match self.continuation {
                    Some(c) => node = c,
                    None if start < word.len() => break,
                    None => {}
                }
            }
            if start >= word.len() {
                return;
            }
        }
        // Too long, or a remainder no piece matches: the whole word is one unknown token.
        out.truncate(first_piece);
        if out.len() < limit {
            out.push(self.unk_id);
        }
    }
}
