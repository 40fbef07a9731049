// The order of the DAG's nodes within each column: the definition's. dagre places each node in a
// column (its layer: after its parents) and orders each column to cross few edges, which shuffles
// tasks a user wrote in a meaningful order (prepare, train, evaluate...). Here each column lists
// its tasks top to bottom in the order the definition lists them (the graph API keeps it: the
// compiled task order), unless that crosses more edges than dagre's own order; then dagre's wins.

/** A dagre `customOrder`: `keyOf(id)` is a node's place in the definition (lower: higher up).
 * After the layout, its `followed` says whether the definition's order was kept. */
export function definitionOrder(keyOf) {
  const custom = (g, order) => {
    order(g); // dagre's crossing-minimising order: node.order within node.rank
    const best = layers(g, (a, b) => g.node(a).order - g.node(b).order);
    // [place, then place of the edge's source]: a long edge's bend points sit just above the task
    // the edge goes to, and bend points of edges into one task (a fan-in) in their sources' order
    // (not by dagre's names for them, where "_d10" sorts before "_d6" and crosses the fan).
    const key = (v) => {
      const node = g.node(v);
      return node.dummy && node.edgeObj
        ? [keyOf(node.edgeObj.w) - 0.5, keyOf(node.edgeObj.v)]
        : [keyOf(v), -1];
    };
    const defined = layers(g, (a, b) => {
      const [ka, kb] = [key(a), key(b)];
      return ka[0] - kb[0] || ka[1] - kb[1] || (a < b ? -1 : a > b ? 1 : 0);
    });
    const chosen = crossings(g, defined) <= crossings(g, best) ? defined : best;
    for (const layer of chosen) layer.forEach((v, i) => { g.node(v).order = i; });
    custom.followed = chosen === defined;
  };
  return custom;
}

function layers(g, compare) {
  const byRank = new Map();
  for (const v of g.nodes()) {
    const rank = g.node(v).rank;
    if (!byRank.has(rank)) byRank.set(rank, []);
    byRank.get(rank).push(v);
  }
  return [...byRank.keys()].sort((a, b) => a - b).map((r) => byRank.get(r).sort(compare));
}

/** Edge crossings between adjacent layers (dagre's edges span one layer by now), counted as
 * inversions with a Fenwick tree: O(E log V). */
export function crossings(g, ordered) {
  const pos = new Map();
  for (const layer of ordered) layer.forEach((v, i) => pos.set(v, i));
  let total = 0;
  for (let r = 0; r + 1 < ordered.length; r++) {
    const pairs = [];
    for (const v of ordered[r]) {
      for (const e of g.outEdges(v) || []) if (pos.has(e.w)) pairs.push([pos.get(v), pos.get(e.w)]);
    }
    pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const size = ordered[r + 1].length + 1;
    const tree = new Array(size + 1).fill(0);
    let seen = 0;
    for (const [, w] of pairs) {
      let below = 0; // targets placed so far at or above w
      for (let i = w + 1; i > 0; i -= i & -i) below += tree[i];
      total += seen - below;
      for (let i = w + 1; i <= size; i += i & -i) tree[i] += 1;
      seen += 1;
    }
  }
  return total;
}
