// The official Meilisearch JavaScript client against lendgraphtest's search
// host. Run by meilisearchjs_test.go, which starts the fake, installs the
// client pinned in package-lock.json and passes in $LG_CONFIG: tokenURL
// (the SDK's Search.TokenHandler, as a web page would fetch it),
// shortTokenURL (a token that expires 2 s after it is minted) and
// companiesToken (a token scoped to the companies index).
// Every check prints "ok <name>"; the first failure throws.
import assert from "node:assert/strict";
import { Meilisearch, MeilisearchApiError } from "meilisearch";

const cfg = JSON.parse(process.env.LG_CONFIG);

async function fetchToken(url) {
  const res = await fetch(url);
  assert.equal(res.status, 200, `GET ${url}`);
  return res.json();
}

const token = await fetchToken(cfg.tokenURL);
assert.deepEqual(Object.keys(token).sort(), ["expiresAt", "host", "indexes", "token"]);
cfg.host = token.host;
const client = new Meilisearch({ host: token.host, apiKey: token.token });
const agents = client.index("agents");
let checks = 0;

async function check(name, fn) {
  try {
    await fn();
  } catch (err) {
    err.message = `${name}: ${err.message}`;
    throw err;
  }
  checks++;
  console.log(`ok ${name}`);
}

// refused runs fn and wants the host's error: status, code, and the
// message's start when given.
async function refused(fn, status, code, messageStart) {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof MeilisearchApiError, `not an API error: ${err}`);
    assert.equal(err.response.status, status, err.message);
    assert.equal(err.cause.code, code, err.message);
    assert.equal(err.cause.link, `https://docs.meilisearch.com/errors#${code}`);
    assert.ok(err.cause.type, "no type");
    if (messageStart) assert.ok(err.cause.message.startsWith(messageStart), err.cause.message);
    return err;
  }
  assert.fail(`no error, want ${status} ${code}`);
}

const lower = (s) => s.toLowerCase();

await check("health", async () => {
  assert.deepEqual(await client.health(), { status: "available" });
});

await check("plain search with limit and offset", async () => {
  const r = await client.index("originators").search("smi", { limit: 2 });
  assert.equal(r.hits.length, 2);
  assert.equal(r.limit, 2);
  assert.equal(r.offset, 0);
  assert.equal(r.query, "smi");
  assert.ok(r.estimatedTotalHits >= 2);
  for (const h of r.hits) assert.ok(lower(h.firstName).startsWith("smi") || lower(h.lastName).startsWith("smi"), JSON.stringify(h));
});

await check("page and hitsPerPage", async () => {
  const paged = await agents.search("jo", { page: 2, hitsPerPage: 2 });
  assert.equal(paged.hits.length, 2);
  assert.equal(paged.page, 2);
  assert.equal(paged.hitsPerPage, 2);
  assert.equal(paged.totalPages, Math.ceil(paged.totalHits / 2));
  assert.equal(paged.estimatedTotalHits, undefined);
  assert.equal(paged.limit, undefined);
  const offset = await agents.search("jo", { offset: 2, limit: 2 });
  assert.deepEqual(paged.hits.map((h) => h.id), offset.hits.map((h) => h.id));
  assert.equal(offset.estimatedTotalHits, paged.totalHits);
});

await check("facets", async () => {
  const all = await agents.search("", { filter: "states = TX", limit: 1000 });
  const r = await agents.search("", { filter: "states = TX", facets: ["states", "cities"], limit: 1 });
  assert.deepEqual(r.facetDistribution.states, { TX: all.hits.length });
  const cities = {};
  for (const h of all.hits) for (const c of h.cities) cities[c] = (cities[c] ?? 0) + 1;
  assert.deepEqual(r.facetDistribution.cities, cities);
  assert.deepEqual(r.facetStats, {});
  await refused(() => agents.search("", { facets: ["lastName"] }), 400, "invalid_search_facets",
    "Invalid facet distribution: Pattern `lastName` is not filterable.");
});

await check("sort", async () => {
  for (const order of ["asc", "desc"]) {
    const r = await agents.search("", { sort: [`lastName:${order}`], limit: 100 });
    const names = r.hits.map((h) => lower(h.lastName));
    const sorted = [...names].sort();
    if (order === "desc") sorted.reverse();
    assert.deepEqual(names, sorted);
  }
  await refused(() => agents.search("", { sort: ["states:asc"] }), 400, "invalid_search_sort", "Attribute `states` is not sortable.");
});

await check("showRankingScore", async () => {
  const r = await agents.search("john smi", { showRankingScore: true, limit: 50 });
  assert.ok(r.hits.length > 0);
  let prev = 1;
  for (const h of r.hits) {
    assert.equal(typeof h._rankingScore, "number");
    assert.ok(h._rankingScore <= prev && h._rankingScore > 0, `${h._rankingScore} after ${prev}`);
    prev = h._rankingScore;
  }
  const plain = await agents.search("john smi", { limit: 1 });
  assert.equal(plain.hits[0]._rankingScore, undefined);
});

await check("filter syntax error", async () => {
  await refused(() => agents.search("jo", { filter: "states === " }), 400, "invalid_search_filter", "Was expecting a value but instead got nothing.");
  await refused(() => agents.search("jo", { filter: "zip = 1" }), 400, "invalid_search_filter", "Attribute `zip` is not filterable.");
});

await check("filter expressions and arrays", async () => {
  const r = await agents.search("", { filter: [["states = TX", "states = CA"], "cities != Austin"], limit: 500 });
  assert.ok(r.hits.length > 0);
  for (const h of r.hits) {
    assert.ok(h.states.includes("TX") || h.states.includes("CA"));
    assert.ok(!h.cities.includes("Austin"));
  }
});

await check("highlight, crop and matches position", async () => {
  const r = await client.index("companies").search("summ", {
    attributesToHighlight: ["name"], highlightPreTag: "<mark>", highlightPostTag: "</mark>",
    attributesToCrop: ["name"], cropLength: 1, showMatchesPosition: true, limit: 3,
  });
  for (const h of r.hits) {
    assert.match(h._formatted.name, /^<mark>Summ<\/mark>/i);
    assert.deepEqual(h._matchesPosition.name, [{ start: 0, length: 4 }]);
  }
});

await check("matchingStrategy and distinct", async () => {
  const last = await agents.search("john smi", { limit: 1000 });
  const all = await agents.search("john smi", { limit: 1000, matchingStrategy: "all" });
  assert.ok(all.hits.length < last.hits.length, `${all.hits.length} vs ${last.hits.length}`);
  const d = await agents.search("", { distinct: "states", limit: 1000 });
  const states = d.hits.map((h) => h.states[0]);
  assert.equal(new Set(states).size, states.length);
});

await check("searchGet", async () => {
  const r = await agents.searchGet("jo", { limit: 3, facets: ["states"], sort: ["lastName:asc"], filter: "states = TX" });
  assert.equal(r.hits.length, 3);
  assert.ok(r.facetDistribution.states.TX > 0);
});

await check("unknown parameter", async () => {
  await refused(() => agents.search("jo", { foo: 1 }), 400, "bad_request", "Unknown field `foo`");
});

await check("multi-search", async () => {
  const r = await client.multiSearch({
    queries: [
      { indexUid: "agents", q: "jo", limit: 2 },
      { indexUid: "companies", q: "sum", page: 1, hitsPerPage: 3, facets: ["states"] },
    ],
  });
  assert.equal(r.results.length, 2);
  assert.equal(r.results[0].indexUid, "agents");
  assert.equal(r.results[0].hits.length, 2);
  assert.equal(r.results[1].indexUid, "companies");
  assert.equal(r.results[1].hits.length, 3);
  assert.equal(typeof r.results[1].totalHits, "number");
  assert.ok(r.results[1].facetDistribution.states);
  const single = await agents.search("jo", { limit: 2 });
  assert.deepEqual(r.results[0].hits, single.hits);
  await refused(() => client.multiSearch({ queries: [{ indexUid: "agents", filter: "states === " }] }), 400,
    "invalid_search_filter", "Inside `.queries[0]`: Was expecting a value");
});

await check("token scoping", async () => {
  const scoped = new Meilisearch({ host: cfg.host, apiKey: cfg.companiesToken });
  const r = await scoped.index("companies").search("sum", { limit: 1 });
  assert.equal(r.hits.length, 1);
  await refused(() => scoped.index("agents").search("jo"), 403, "invalid_api_key");
  await refused(() => scoped.multiSearch({ queries: [{ indexUid: "companies" }, { indexUid: "agents" }] }), 403,
    "invalid_api_key", "Inside `.queries[1]`:");
});

await check("wrong token", async () => {
  const wrong = new Meilisearch({ host: cfg.host, apiKey: "lgs_wrong" });
  await refused(() => wrong.index("agents").search("jo"), 401, "invalid_api_key");
  await refused(() => wrong.multiSearch({ queries: [{ indexUid: "agents" }] }), 401, "invalid_api_key");
  const none = new Meilisearch({ host: cfg.host });
  await refused(() => none.index("agents").search("jo"), 401, "missing_authorization_header");
});

await check("token expiry", async () => {
  const tok = await fetchToken(cfg.shortTokenURL);
  const short = new Meilisearch({ host: tok.host, apiKey: tok.token });
  assert.equal((await short.index("agents").search("jo", { limit: 1 })).hits.length, 1);
  const wait = Date.parse(tok.expiresAt) - Date.now() + 200;
  await new Promise((resolve) => setTimeout(resolve, Math.max(wait, 0)));
  await refused(() => short.index("agents").search("jo"), 403, "invalid_api_key");
  await refused(() => short.multiSearch({ queries: [{ indexUid: "agents" }] }), 403, "invalid_api_key");
});

console.log(`passed ${checks} checks`);
