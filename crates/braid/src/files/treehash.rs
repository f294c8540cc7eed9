//! A file's BLAKE3 assembled from its blocks in any order.
//!
//! BLAKE3 is a tree hash: an aligned run of 2^k chunks is a subtree whose
//! chaining value can be computed on its own. Blocks are a power of two of
//! at least one chunk and start at multiples of their size, so each block is
//! such a subtree (the last one possibly short, on the tree's right edge).
//! Each end hashes a block from the buffer it already holds for the network,
//! on whichever stream's thread carries it, and merges the chaining values
//! once the file is complete: the result is exactly `blake3::hash` of the
//! whole file, with no second pass over the data and no single-threaded
//! hash after the last block. Blocks that never passed through a buffer
//! (already held on a resume) are hashed from disk at the end.

use blake3::hazmat::{
    left_subtree_len, merge_subtrees_non_root, merge_subtrees_root, ChainingValue, HasherExt, Mode,
};

/// Whether `block_size` can carry a tree hash: a power of two of whole chunks.
pub fn valid_block_size(block_size: u32) -> bool {
    block_size.is_power_of_two() && block_size as usize >= blake3::CHUNK_LEN
}

/// The index of the block of a `size`-byte file that is exactly
/// `offset..offset + len`, if any: a resumed transfer may move ranges cut by
/// an earlier block size, and a peer may send anything.
pub fn block_index(size: u64, block_size: u32, offset: u64, len: u64) -> Option<usize> {
    let block = block_size as u64;
    (offset % block == 0 && offset < size && len == block.min(size - offset))
        .then_some((offset / block) as usize)
}

/// The chaining value of a block fed in pieces, as they cross a connection:
/// neither end holds a whole block in memory.
pub struct BlockHasher {
    h: blake3::Hasher,
    /// The block is the whole file: its value is the file's hash itself.
    whole: bool,
}

impl BlockHasher {
    /// For the `len` bytes at `offset` of a file of `size` bytes.
    pub fn new(offset: u64, len: u64, size: u64) -> Self {
        let mut h = blake3::Hasher::new();
        let whole = offset == 0 && len == size;
        if !whole {
            h.set_input_offset(offset);
        }
        BlockHasher { h, whole }
    }

    /// The block's next bytes, in order.
    pub fn update(&mut self, piece: &[u8]) {
        self.h.update(piece);
    }

    pub fn finish(&self) -> ChainingValue {
        if self.whole {
            *self.h.finalize().as_bytes()
        } else {
            self.h.finalize_non_root()
        }
    }
}

/// The chaining value of the block at `offset` of a file of `size` bytes; for
/// a file that is this one block, the file's hash itself.
fn block_value(data: &[u8], offset: u64, size: u64) -> [u8; 32] {
    let mut h = BlockHasher::new(offset, data.len() as u64, size);
    h.update(data);
    h.finish()
}

/// The blocks of one file and the chaining values known so far.
#[derive(Clone, Debug)]
pub struct BlockTree {
    size: u64,
    block: u64,
    values: Vec<Option<ChainingValue>>,
}

impl BlockTree {
    /// `block_size` must satisfy [`valid_block_size`].
    pub fn new(size: u64, block_size: u32) -> Self {
        assert!(valid_block_size(block_size), "block size {block_size}");
        let block = block_size as u64;
        BlockTree {
            size,
            block,
            values: vec![None; size.div_ceil(block) as usize],
        }
    }

    /// The index of the block that is exactly `offset..offset + len`, if any.
    pub fn block_at(&self, offset: u64, len: u64) -> Option<usize> {
        block_index(self.size, self.block as u32, offset, len)
    }

    /// Hashes `data`, found at `offset`, if it is one whole block; returns
    /// whether it was.
    pub fn add(&mut self, offset: u64, data: &[u8]) -> bool {
        match self.block_at(offset, data.len() as u64) {
            Some(i) => {
                self.values[i] = Some(block_value(data, offset, self.size));
                true
            }
            None => false,
        }
    }

    /// Records a value computed elsewhere (with [`hash_block`]).
    pub fn set(&mut self, index: usize, value: ChainingValue) {
        self.values[index] = Some(value);
    }

    /// Blocks still without a value, as (index, offset, length).
    pub fn missing(&self) -> Vec<(usize, u64, usize)> {
        self.values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_none())
            .map(|(i, _)| {
                let at = i as u64 * self.block;
                (i, at, self.block.min(self.size - at) as usize)
            })
            .collect()
    }

    /// The file's BLAKE3, once every block has a value.
    pub fn root(&self) -> Option<[u8; 32]> {
        if self.size == 0 {
            return Some(*blake3::hash(b"").as_bytes());
        }
        if self.values.iter().any(Option::is_none) {
            return None;
        }
        if self.values.len() == 1 {
            return self.values[0];
        }
        let split = left_subtree_len(self.size);
        let (l, r) = (self.merge(0, split), self.merge(split, self.size - split));
        Some(*merge_subtrees_root(&l, &r, Mode::Hash).as_bytes())
    }

    /// The chaining value of the subtree over `len` bytes at `at`, more than the root.
    fn merge(&self, at: u64, len: u64) -> ChainingValue {
        if len <= self.block {
            return self.values[(at / self.block) as usize].expect("checked by root");
        }
        let split = left_subtree_len(len);
        merge_subtrees_non_root(
            &self.merge(at, split),
            &self.merge(at + split, len - split),
            Mode::Hash,
        )
    }
}

/// A block's value computed outside the tree (so no lock is held while hashing).
pub fn hash_block(data: &[u8], offset: u64, size: u64) -> ChainingValue {
    block_value(data, offset, size)
}

/// Bytes as lowercase hex: hashes in messages, names derived from them, tokens.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Vec<u8> {
        // Not periodic at any block size, so a misplaced block changes the hash.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn tree_of(bytes: &[u8], block: u32, order: impl Iterator<Item = usize>) -> BlockTree {
        let mut t = BlockTree::new(bytes.len() as u64, block);
        let b = block as usize;
        for i in order {
            let at = i * b;
            assert!(t.add(at as u64, &bytes[at..(at + b).min(bytes.len())]));
        }
        t
    }

    #[test]
    fn equals_blake3_of_the_whole_file_for_any_size() {
        let block = 4096u32;
        let sizes = [
            0,
            1,
            1023,
            1024,
            1025,
            4095,
            4096,
            4097,
            8192,
            8193,
            12288,
            20000,
            65536,
            65537,
            99999,
            131072 + 4096,
        ];
        for &n in &sizes {
            let bytes = data(n);
            let blocks = n.div_ceil(block as usize);
            // Last block first: the order blocks arrive in does not matter.
            let t = tree_of(&bytes, block, (0..blocks).rev());
            assert_eq!(
                t.root(),
                Some(*blake3::hash(&bytes).as_bytes()),
                "{n} bytes"
            );
        }
    }

    #[test]
    fn block_sizes_from_one_chunk_up() {
        let bytes = data(300_000);
        for block in [1024u32, 2048, 65536, 1 << 20] {
            let blocks = bytes.len().div_ceil(block as usize);
            let t = tree_of(&bytes, block, 0..blocks);
            assert_eq!(t.root(), Some(*blake3::hash(&bytes).as_bytes()), "{block}");
        }
    }

    #[test]
    fn incomplete_until_the_missing_blocks_are_filled() {
        let bytes = data(10_000);
        let mut t = BlockTree::new(10_000, 4096);
        assert!(t.add(4096, &bytes[4096..8192]));
        assert_eq!(t.root(), None);
        let missing = t.missing();
        assert_eq!(missing, vec![(0, 0, 4096), (2, 8192, 1808)]);
        for (i, at, len) in missing {
            let at_u = at as usize;
            t.set(i, hash_block(&bytes[at_u..at_u + len], at, 10_000));
        }
        assert_eq!(t.root(), Some(*blake3::hash(&bytes).as_bytes()));
    }

    #[test]
    fn pieces_that_are_not_whole_blocks_are_not_taken() {
        let bytes = data(10_000);
        let mut t = BlockTree::new(10_000, 4096);
        assert!(!t.add(0, &bytes[..2048]), "half a block");
        assert!(!t.add(2048, &bytes[2048..6144]), "unaligned");
        assert!(!t.add(8192, &bytes[8192..9000]), "a short last block");
        assert!(!t.add(12288, &bytes[..10]), "beyond the end");
        assert_eq!(t.missing().len(), 3);
    }

    #[test]
    fn a_changed_byte_changes_the_root() {
        let mut bytes = data(20_000);
        let good = tree_of(&bytes, 4096, 0..5).root();
        bytes[12_345] ^= 1;
        assert_ne!(tree_of(&bytes, 4096, 0..5).root(), good);
    }

    #[test]
    fn a_block_hashed_in_pieces_has_the_value_of_the_whole() {
        let bytes = data(300_000);
        for (offset, len) in [(0u64, 300_000usize), (65536, 65536), (262144, 37856)] {
            let block = &bytes[offset as usize..offset as usize + len];
            let mut h = BlockHasher::new(offset, len as u64, 300_000);
            for piece in block.chunks(7777) {
                h.update(piece);
            }
            assert_eq!(h.finish(), hash_block(block, offset, 300_000), "{offset}");
        }
    }

    #[test]
    fn block_sizes_that_cannot_carry_a_tree() {
        assert!(valid_block_size(4096) && valid_block_size(1 << 26));
        assert!(!valid_block_size(3 << 20) && !valid_block_size(512) && !valid_block_size(0));
    }
}
