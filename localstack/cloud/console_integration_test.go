//go:build integration

// The console (docs/console.md) in a real browser, on the local cloud:
// signed in through the demo issuer's authorization-code flow with PKCE,
// a reply streamed into the page and settled as the stored reply, why its
// agent was chosen, agent text rendered inert, then signed in with a
// fresh team's key: a held tool call approved from the Approvals page and
// its result in the chat, a session watched to completion, the team, and
// a phone-width screen. Every page passes axe-core with no serious or
// critical violation, the first load of the chat page weighs at most
// 300 KB on the wire, and nothing in the page logs an error.
package cloud_test

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
)

// MaxConsoleFirstLoad is the most the chat page's first load may move over
// the wire (compressed, headers included): the page weight.
const MaxConsoleFirstLoad = 300 << 10

func TestTheConsoleInARealBrowser(t *testing.T) {
	e := mustEnv(t)
	base := os.Getenv("CONCLAVE_BASE_URL")
	require.NotEmpty(t, base)
	b := newBrowser(t)

	consoleSignInWithTheProvider(t, b, base)
	consoleFirstLoadWeight(t, b)
	consoleStreamedTurn(t, b, base)
	consoleAgentTextIsInert(t, b)
	b.run("sign out", chromedp.Click(chromedp.CSS("#signout")))
	b.waitFor("the sign-in view after signing out", `!document.querySelector("#signin").hidden && sessionStorage.length === 0`, 10*time.Second)

	d := approvalTeam(t, e, 600)
	consoleSignInWithAKey(t, b, d.key)
	consoleApprovalFromTheApprovalsPage(t, b, d)
	consoleSessionWatched(t, b, d)
	consoleTeamPage(t, b)
	consolePhoneWidth(t, b)
	for _, l := range b.log() {
		assert.NotContains(t, l, d.key, "the key is never logged by the page")
	}
	assert.Empty(t, b.errors(), "the page logged no error, exception or refused policy")
}

// consoleSignInWithTheProvider signs in as an admin of the demo team
// through the local issuer's login page (authorization code with PKCE).
func consoleSignInWithTheProvider(t *testing.T, b *browser, base string) {
	b.run("open the console", chromedp.Navigate(base+"/console/"))
	b.waitFor("the sign-in view", `document.querySelector("#signin") && !document.querySelector("#signin").hidden`, 15*time.Second)
	b.screenshot("signin")
	assertAccessible(t, b, "sign-in")
	b.run("sign in with the provider", chromedp.Click(chromedp.CSS("#signin-oidc")))
	b.waitFor("the issuer's login page", `location.pathname.endsWith("/oidc/demo/authorize")`, 15*time.Second)
	b.run("log in as alice, an admin", chromedp.SendKeys(chromedp.CSS(`input[name="user"]`), "alice"),
		chromedp.Click(chromedp.CSS(`input[name="admin"]`)), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	b.waitFor("back in the console, signed in", `location.pathname.startsWith("/console") && document.querySelector("#signin") && document.querySelector("#signin").hidden`, 20*time.Second)
	url := evalJS[string](b, `location.href`)
	assert.NotContains(t, url, "code=", "the code leaves the address bar once redeemed")
	who := evalJS[string](b, `document.querySelector("#whoami").textContent`)
	assert.Contains(t, who, "alice")
	local := evalJS[int](b, `localStorage.length + document.cookie.length`)
	assert.Zero(t, local, "the token is kept in sessionStorage only: nothing in localStorage or a cookie")
}

// consoleFirstLoadWeight reloads the chat page with the cache off and
// sums what moved over the wire.
func consoleFirstLoadWeight(t *testing.T, b *browser) {
	b.run("reload without the cache", cacheDisabled(true), chromedp.Reload())
	b.waitFor("the chat page", `document.querySelector("#page-chat") && !document.querySelector("#page-chat").hidden && document.querySelector("#conversation-list")`, 15*time.Second)
	time.Sleep(time.Second) // the page's first API reads end
	weight := evalJS[struct {
		Total float64 `json:"total"`
		Files int     `json:"files"`
	}](b, `(() => { const e = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
		return {total: e.reduce((s, x) => s + x.transferSize, 0), files: e.length}; })()`)
	t.Logf("console: first load of the chat page: %.0f bytes over the wire in %d requests (limit %d)", weight.Total, weight.Files, MaxConsoleFirstLoad)
	assert.Greater(t, weight.Total, 10_000.0, "the page, its modules and its libraries were measured")
	assert.LessOrEqual(t, weight.Total, float64(MaxConsoleFirstLoad))
	b.run("cache back on", cacheDisabled(false))
}

// cacheDisabled turns the browser's HTTP cache off (or on again).
func cacheDisabled(off bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: off})
		return err
	})
}

// consoleStreamedTurn sends a message in a new conversation and watches
// the reply grow delta by delta, then settle as the stored reply.
func consoleStreamedTurn(t *testing.T, b *browser, base string) {
	b.run("new conversation", chromedp.Click(chromedp.CSS("#new-conversation")))
	b.waitFor("an empty conversation", `document.querySelector("#message-input") && document.querySelectorAll("#messages article.message").length === 0`, 10*time.Second)
	// The streaming API's URL, as the page is told it.
	evalJS[bool](b, `fetch("/console/config.json").then(r => r.json()).then(c => { window.__stream = c.stream_url; return c.stream_url.startsWith("http"); })`)
	// Every length the streaming reply's text had, as the page drew it.
	evalJS[bool](b, `(() => { window.__growth = []; new MutationObserver(() => {
		const m = document.querySelector("#messages article.message.streaming .message-body");
		if (m) window.__growth.push(m.textContent.length); }).observe(document.querySelector("#messages"), {subtree: true, childList: true, characterData: true}); return true; })()`)
	b.run("send", chromedp.SendKeys(chromedp.CSS("#message-input"), "How should we roll out the new billing service to our customers?"),
		chromedp.Click(chromedp.CSS("#send")))
	settled := `#messages article.message[data-role="assistant"]:not(.streaming)[data-message-id^="msg_"]`
	b.waitFor("the stored reply", `document.querySelector(`+jsString(settled)+`)`, 30*time.Second)
	growth := evalJS[[]int](b, `window.__growth`)
	// At least a part, then more: under load the page draws the deltas
	// that arrived within one frame together, so a busy machine sees
	// fewer steps than the model wrote (make test's cloud writes the
	// pieces 80 ms apart, CONCLAVE_BEDROCK_CHUNK_DELAY: at 25 ms a loaded
	// CI run once saw the whole reply in one step).
	assert.GreaterOrEqual(t, distinctRising(growth), 2, "the reply grew in the page as it streamed: %v", growth)

	shown := evalJS[struct{ ID, Agent, Text, Conv string }](b, `(() => { const a = document.querySelector(`+jsString(settled)+`);
		const post = performance.getEntriesByType("resource").map(e => e.name).find(n => /\/v1\/conversations\/[^/]+\/messages$/.test(n) && n.startsWith(window.__stream));
		return {ID: a.dataset.messageId, Agent: a.dataset.agent, Text: a.querySelector(".message-body").textContent.trim(),
			Conv: post ? post.split("/v1/conversations/")[1].split("/")[0] : ""}; })()`)
	require.NotEmpty(t, shown.Conv, "the turn was posted to the streaming API (config.json's stream_url)")
	stored := apitest.Client{Base: base, Key: os.Getenv("CONCLAVE_API_KEY"), T: t}.Do("GET", "/v1/conversations/"+shown.Conv+"/messages", nil).JSON(t)
	var reply map[string]any
	for _, m := range stored["items"].([]any) {
		if m := m.(map[string]any); m["id"] == shown.ID {
			reply = m
		}
	}
	require.NotNil(t, reply, "the page shows the stored reply's id %s", shown.ID)
	assert.Equal(t, reply["agent"], shown.Agent, "the reply names its agent")
	assert.Equal(t, strings.TrimSpace(reply["content"].(string)), shown.Text, "the streamed text ended as the stored reply")
	b.screenshot("chat")
	assertAccessible(t, b, "chat")

	b.run("why this agent", chromedp.Click(chromedp.CSS(settled+" button.why")))
	b.waitFor("the routing panel", `document.querySelector("#why-panel") && !document.querySelector("#why-panel").hidden && document.querySelectorAll("#why-scores tr").length > 1`, 10*time.Second)
	why := evalJS[struct{ DecidedBy, Confidence string }](b, `({DecidedBy: document.querySelector("#why-decided-by").textContent, Confidence: document.querySelector("#why-confidence").textContent})`)
	assert.NotEmpty(t, strings.TrimSpace(why.DecidedBy), "how the agent was chosen")
	assert.Contains(t, why.Confidence, "threshold", "the confidence is shown against the threshold")
	b.screenshot("why")
	assertAccessible(t, b, "why this agent")
	b.run("close the panel", chromedp.Click(chromedp.CSS("#why-close")))
}

// distinctRising counts the rising steps of a series of lengths.
func distinctRising(ls []int) int {
	n, last := 0, 0
	for _, l := range ls {
		if l > last {
			n, last = n+1, l
		}
	}
	return n
}

// consoleAgentTextIsInert: a reply that repeats an image with an event
// handler, a javascript: link and a script (the local model quotes the
// question) shows them as text, with no element, handler or link
// target; and the page's one renderer refuses every other way in.
func consoleAgentTextIsInert(t *testing.T, b *browser) {
	before := evalJS[int](b, `document.querySelectorAll('#messages article.message[data-role="assistant"]').length`)
	msg := `Format this: <img src=x onerror='window.__pwned=1'> and [click me](javascript:window.__pwned=2) <script>window.__pwned=3</script>`
	b.run("send markup", chromedp.SendKeys(chromedp.CSS("#message-input"), msg), chromedp.Click(chromedp.CSS("#send")))
	b.waitFor("the reply", `document.querySelectorAll('#messages article.message[data-role="assistant"]:not(.streaming)').length > `+strconv.Itoa(before), 30*time.Second)
	reply := evalJS[struct {
		Elements, JSLinks int
		Text              string
	}](b, `(() => { const all = document.querySelectorAll('#messages article.message[data-role="assistant"]:not(.streaming)');
		const r = all[all.length - 1].querySelector(".message-body");
		return {Elements: r.querySelectorAll("img, script, [onerror], [onclick], [onload]").length,
			JSLinks: [...r.querySelectorAll("a")].filter(a => /^\s*javascript:/i.test(a.getAttribute("href") || "")).length,
			Text: r.textContent}; })()`)
	assert.Contains(t, reply.Text, `<img src=x onerror='window.__pwned=1'>`, "the reply repeats the markup, shown as text")
	assert.Contains(t, reply.Text, `<script>window.__pwned=3</script>`)
	assert.Contains(t, reply.Text, "click me", "the link's text is kept")
	assert.Zero(t, reply.Elements, "no image, script or handler in the reply")
	assert.Zero(t, reply.JSLinks, "no javascript: link")
	assert.Nil(t, evalJS[any](b, `window.__pwned === undefined ? null : window.__pwned`), "nothing the agent wrote ran")

	// The renderer itself (markdown.js, the page's one way to HTML).
	out := evalJS[map[string]string](b, `import("/console/markdown.js").then(m => Object.fromEntries(Object.entries({
		js: "[a](javascript:alert(1))", vb: "[b](vbscript:msgbox(1))", data: "[c](data:text/html,<b>x</b>)", other: "[d](//evil.example/x)",
		remote: "![logo](https://evil.example/a.png)", svg: "<svg onload=alert(1)><circle/></svg>", style: "<style>*{display:none}</style>",
		ok: "[e](https://example.com/x) ![f](/console/favicon.png)"}).map(([k, v]) => [k, m.renderMarkdown(v)])))`)
	for _, k := range []string{"js", "vb", "data", "other"} {
		assert.NotContains(t, out[k], "href", "%s: a link to another origin or scheme has no target: %s", k, out[k])
	}
	assert.NotContains(t, out["remote"], "<img", "a remote image is not loaded")
	assert.Contains(t, out["remote"], "remote image not loaded")
	assert.NotContains(t, out["svg"], "<svg")
	assert.NotContains(t, out["style"], "<style")
	assert.Contains(t, out["ok"], `href="https://example.com/x"`, "an https link is kept")
	assert.Contains(t, out["ok"], `rel="noopener noreferrer nofollow"`)
	assert.Contains(t, out["ok"], `<img src="/console/favicon.png"`, "an image of this origin is kept")
}

// consoleSignInWithAKey signs in with an API key, kept in sessionStorage
// only.
func consoleSignInWithAKey(t *testing.T, b *browser, key string) {
	b.waitFor("the key form", `document.querySelector("#apikey")`, 10*time.Second)
	b.run("sign in with the key", chromedp.SendKeys(chromedp.CSS("#apikey"), key), chromedp.Click(chromedp.CSS("#apikey-submit")))
	b.waitFor("signed in", `document.querySelector("#signin").hidden`, 15*time.Second)
	where := evalJS[struct {
		URL, Cookie, Session string
		Local                int
	}](b, `({URL: location.href, Cookie: document.cookie, Local: localStorage.length, Session: sessionStorage.getItem("conclave.credential") || ""})`)
	assert.Contains(t, where.Session, key, "the key is kept in the tab's sessionStorage")
	assert.NotContains(t, where.URL, key, "the key is never in the address")
	assert.Empty(t, where.Cookie, "the key is never a cookie")
	assert.Zero(t, where.Local, "the key is never in localStorage")
}

// consoleApprovalFromTheApprovalsPage: ava's call to send_agent_message,
// gated by the team's policy, is held in the chat; approved from the
// Approvals page, its result is posted into the conversation.
func consoleApprovalFromTheApprovalsPage(t *testing.T, b *browser, d demoTeam) {
	conv := d.conversation("ava")
	evalJS[bool](b, `location.hash = "#/chat"; true`)
	item := `#conversation-list li[data-conversation-id=` + jsString(conv) + `]`
	b.waitFor("the conversation in the list", `document.querySelector(`+jsString(item)+`)`, 15*time.Second)
	evalJS[bool](b, `document.querySelector(`+jsString(item)+`).querySelector("a, button").click(); true`)
	b.waitFor("the conversation open", `document.querySelector("#message-input")`, 10*time.Second)
	b.run("ask ava", chromedp.SendKeys(chromedp.CSS("#message-input"), "Tell luke the release ships on Friday"),
		chromedp.Click(chromedp.CSS("#send")))
	b.waitFor("the held call in the reply", `document.querySelector("#messages .held-call[data-approval-id]")`, 30*time.Second)
	approval := evalJS[string](b, `document.querySelector("#messages .held-call").dataset.approvalId`)
	require.True(t, regexp.MustCompile(`^apr_`).MatchString(approval), approval)

	// A second window of the same person, signed in for itself, decides
	// on the Approvals page while the first stays on the conversation.
	w := b.tab()
	w.run("open the console", chromedp.Navigate(os.Getenv("CONCLAVE_BASE_URL")+"/console"))
	consoleSignInWithAKey(t, w, d.key)
	evalJS[bool](w, `location.hash = "#/approvals"; true`)
	row := `#approval-list article.approval[data-approval-id=` + jsString(approval) + `]`
	w.waitFor("the approval listed", `document.querySelector(`+jsString(row)+`)`, 30*time.Second)
	shown := evalJS[struct{ Agent, Tool, Args string }](w, `(() => { const r = document.querySelector(`+jsString(row)+`); return {Agent: r.querySelector(".approval-agent").textContent,
		Tool: r.querySelector(".approval-tool").textContent, Args: r.querySelector("textarea.approval-args").value}; })()`)
	assert.Contains(t, shown.Agent, "ava")
	assert.Contains(t, shown.Tool, "send_agent_message")
	assert.Contains(t, shown.Args, `"to_agent"`)
	w.screenshot("approvals")
	assertAccessible(t, w, "approvals")
	w.run("approve", chromedp.Click(chromedp.CSS(row+" button.approve")))
	w.waitFor("the approval decided", `!document.querySelector(`+jsString(row)+`)`, 20*time.Second)
	st, got := d.call("GET", "/v1/approvals/"+approval, nil)
	require.Equal(t, 200, st, got)
	assert.Equal(t, "approved", got["status"])
	assert.Empty(t, w.errors(), "the second window logged no error")

	// The answer the task finished after the decision, posted into the
	// conversation as the result of its task (docs/approvals.md), appears
	// in the first window by itself: the page follows the conversation's
	// event stream.
	b.waitFor("the call's result posted into the open chat", `[...document.querySelectorAll('#messages article.message[data-role="assistant"] .work-note')].some(n => n.textContent.startsWith("Result of task"))`, 60*time.Second)
}

// consoleSessionWatched: a session started through the API, followed on
// the Work page from its event stream to its end.
func consoleSessionWatched(t *testing.T, b *browser, d demoTeam) {
	st, sess := d.call("POST", "/v1/sessions", map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "Name the next release",
		"participants": twoContributors("luke", "archie")})
	require.Equal(t, 201, st, sess)
	id := sess["id"].(string)
	evalJS[bool](b, `location.hash = "#/work"; true`)
	item := `#session-list li.session[data-session-id=` + jsString(id) + `]`
	b.waitFor("the session listed", `document.querySelector(`+jsString(item)+`)`, 15*time.Second)
	evalJS[bool](b, `(document.querySelector(`+jsString(item)+` + " a, " + `+jsString(item)+` + " button") || document.querySelector(`+jsString(item)+`)).click(); true`)
	b.waitFor("the session watched to its end, its events listed as they came", `document.querySelector("#session-status") && document.querySelector("#session-status").textContent.trim() === "completed" && document.querySelectorAll("#session-events li").length >= 2`, 90*time.Second)
	b.screenshot("work")
	assertAccessible(t, b, "work")
}

func consoleTeamPage(t *testing.T, b *browser) {
	evalJS[bool](b, `location.hash = "#/team"; true`)
	b.waitFor("the team's agents", `document.querySelectorAll("#agent-list article.agent").length >= 5`, 15*time.Second)
	b.screenshot("team")
	assertAccessible(t, b, "team")
}

// consolePhoneWidth: the chat page on a 390 px screen scrolls down, not
// sideways.
func consolePhoneWidth(t *testing.T, b *browser) {
	b.run("a phone's screen", chromedp.EmulateViewport(390, 844))
	evalJS[bool](b, `location.hash = "#/chat"; true`)
	b.waitFor("the chat page", `!document.querySelector("#page-chat").hidden`, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	overflow := evalJS[int](b, `document.documentElement.scrollWidth - window.innerWidth`)
	assert.LessOrEqual(t, overflow, 0, "nothing wider than the screen")
	b.screenshot("chat-phone")
	assertAccessible(t, b, "chat on a phone")
}

func assertAccessible(t *testing.T, b *browser, page string) {
	t.Helper()
	assert.Empty(t, b.accessibility(), "%s: axe-core's serious and critical violations", page)
}
