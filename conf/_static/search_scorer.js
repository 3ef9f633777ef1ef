// Search ranking: pages before API entries. Sphinx's default scores an object whose name
// merely contains the query (e.g. `existing_device` for "device") above a page about it.
var Scorer = {
  score: (result) => result[4],
  objNameMatch: 11,
  objPartialMatch: 2,
  objPrio: { 0: 0, 1: -4, 2: -8 },
  objPrioDefault: -4,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
