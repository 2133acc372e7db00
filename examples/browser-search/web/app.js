// The browser side of examples/browser-search: fetch a search token from
// this page's own server (GET /search-token), search the host the token
// names with it, and fetch a new token shortly before it expires. The page
// never sees the API key.
"use strict";

const state = { token: null, tokens: 0, timer: 0, seq: 0 };
const $ = (id) => document.getElementById(id);

// fetchToken gets a token ({token, host, indexes, expiresAt}) and plans
// the next one.
async function fetchToken() {
  const res = await fetch("/search-token", { cache: "no-store" });
  if (!res.ok) throw new Error(`search token: HTTP ${res.status}`);
  const tok = await res.json();
  const fresh = state.token === null || state.token.token !== tok.token;
  if (fresh) state.tokens++;
  state.token = tok;
  document.body.dataset.tokens = String(state.tokens);
  scheduleRefresh(tok, fresh);
  showToken();
  return tok;
}

// scheduleRefresh asks for the next token a twentieth of the lifetime
// before expiry (1 s to 30 s ahead): the SDK's token source renews its own
// cached token earlier than that, so the page then gets a fresh one. If the
// server still hands out the same token, ask again a second later.
function scheduleRefresh(tok, fresh) {
  clearTimeout(state.timer);
  const left = Date.parse(tok.expiresAt) - Date.now();
  let delay = 1000;
  if (fresh) {
    const ahead = Math.min(Math.max(left / 20, 1000), 30000);
    delay = Math.max(left - ahead, 500);
  }
  state.timer = setTimeout(() => fetchToken().catch(showError), delay);
}

function showToken() {
  const t = state.token;
  $("token").textContent = `Search token #${state.tokens} for ${t.indexes.join(", ")} on ${new URL(t.host).host}, ` +
    `valid until ${new Date(t.expiresAt).toLocaleTimeString()} (renewed before it expires).`;
}

// searchHost sends one multi-search with the current token; a 401 or 403
// (the token expired or was revoked) gets a new token and one more try.
async function searchHost(body) {
  let tok = state.token ?? (await fetchToken());
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(`${tok.host.replace(/\/$/, "")}/multi-search`, {
      method: "POST",
      headers: { "Authorization": `Bearer ${tok.token}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if ((res.status === 401 || res.status === 403) && attempt === 0) {
      tok = await fetchToken();
      continue;
    }
    const data = await res.json();
    if (!res.ok) throw new Error(`${data.code}: ${data.message}`);
    return data;
  }
}

// The host marks matches with these; the page escapes the text, then turns
// them into <mark> elements, so no HTML from the data reaches the page.
const PRE = "\u0001", POST = "\u0002";

function marked(text) {
  const escaped = String(text ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return escaped.replaceAll(PRE, "<mark>").replaceAll(POST, "</mark>");
}

function render(list, hits, line) {
  $(list).innerHTML = hits.map((h) => `<li>${line(h._formatted)}</li>`).join("");
}

async function search(q) {
  const seq = ++state.seq;
  const common = { q, limit: 6, highlightPreTag: PRE, highlightPostTag: POST };
  const data = await searchHost({
    queries: [
      { indexUid: "originators", ...common, attributesToHighlight: ["firstName", "lastName"] },
      { indexUid: "companies", ...common, attributesToHighlight: ["name"] },
    ],
  });
  if (seq !== state.seq) return; // a later query already answered
  const [people, orgs] = data.results;
  render("originators", people.hits, (h) =>
    `${marked(h.firstName)} ${marked(h.lastName)}<small>${marked((h.cities ?? []).slice(0, 2).join(", "))} ${marked((h.states ?? []).join(" "))}</small>`);
  render("companies", orgs.hits, (h) => `${marked(h.name)}<small>${marked((h.cities ?? []).join(", "))} ${marked((h.states ?? []).join(" "))}</small>`);
  $("status").textContent = q
    ? `About ${people.estimatedTotalHits} originators and ${orgs.estimatedTotalHits} companies match “${q}”.`
    : "Type to search.";
  document.body.dataset.query = q;
}

function showError(err) {
  $("status").textContent = `Error: ${err.message}`;
  document.body.dataset.error = err.message;
}

let debounce = 0;
$("q").addEventListener("input", (e) => {
  clearTimeout(debounce);
  debounce = setTimeout(() => search(e.target.value.trim()).catch(showError), 120);
});

fetchToken()
  .then(() => { $("status").textContent = "Type to search."; document.body.dataset.ready = "1"; })
  .catch(showError);
