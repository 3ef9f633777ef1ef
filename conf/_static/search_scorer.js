// Search ranking: pages before API entries. Sphinx's default scores an object whose name
// merely contains the query (e.g. `existing_device` for "device") above a page about it.
// Index entries (the glossary's terms) score 100 × query length / entry length by default, far
// above any page: "张量" would list the glossary (张量核心, 张量并行) before the page about
// tensors. An entry that is exactly the query (a reader looking up "warp" or "线程束") still
// comes first; one that only contains it ranks below the pages' own text.
var Scorer = {
  score: (result) => {
    const [, , , , score, , kind] = result;
    if (kind !== "index") return score;
    return score === 100 ? 30 : Math.round(score / 25);
  },
  objNameMatch: 11,
  objPartialMatch: 2,
  objPrio: { 0: 0, 1: -4, 2: -8 },
  objPrioDefault: -4,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
