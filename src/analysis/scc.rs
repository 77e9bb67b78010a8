//! Strongly connected components, by an iterative Tarjan (no recursion:
//! summary graphs have hundreds of thousands of nodes) over a graph given
//! as adjacency slots, so that the summary graph (`robustness`) and the
//! grouped graph of the subset search (`oracle`) share one
//! implementation. It cannot fail: every included node gets a component
//! (an earlier version could return "no component", which a caller reads
//! as *robust*: fail-open, issue 8).

use fixedbitset::FixedBitSet;

/// The component of a node that does not take part.
pub const NONE: u32 = u32::MAX;

/// Component id per node, `NONE` for excluded ones. `include(v)`: node v
/// takes part; `slots(v)`: the range of v's out-adjacency slots;
/// `target(s)`: the node slot s leads to, `None` when the slot does not
/// take part. Roots are tried in node order and slots in range order, so
/// the numbering is deterministic.
pub fn tarjan(
    n: usize,
    include: impl Fn(usize) -> bool,
    slots: impl Fn(usize) -> std::ops::Range<usize>,
    target: impl Fn(usize) -> Option<usize>,
) -> Vec<u32> {
    let mut comp = vec![NONE; n];
    let mut index = vec![NONE; n];
    let mut low = vec![0u32; n];
    let mut on_stack = FixedBitSet::with_capacity(n);
    let mut stack: Vec<u32> = vec![];
    // DFS frames: (node, next slot to look at).
    let mut frames: Vec<(u32, usize)> = vec![];
    let mut next_index = 0u32;
    let mut next_comp = 0u32;
    macro_rules! enter {
        ($v:expr) => {{
            let v: usize = $v;
            index[v] = next_index;
            low[v] = next_index;
            next_index += 1;
            stack.push(v as u32);
            on_stack.insert(v);
            frames.push((v as u32, slots(v).start));
        }};
    }
    for root in 0..n {
        if !include(root) || index[root] != NONE {
            continue;
        }
        enter!(root);
        while let Some(&(v, mut at)) = frames.last() {
            let v = v as usize;
            let end = slots(v).end;
            let mut descended = false;
            while at < end {
                let slot = at;
                at += 1;
                let Some(w) = target(slot) else { continue };
                if index[w] == NONE {
                    if let Some(top) = frames.last_mut() {
                        top.1 = at;
                    }
                    enter!(w);
                    descended = true;
                    break;
                } else if on_stack.contains(w) {
                    low[v] = low[v].min(index[w]);
                }
            }
            if descended {
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                let parent = parent as usize;
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack.remove(w as usize);
                    comp[w as usize] = next_comp;
                    if w as usize == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    comp
}
