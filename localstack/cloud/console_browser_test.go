//go:build integration

// The harness of the console's browser tests (console_integration_test.go):
// the system's Chromium, headless, driven over the DevTools protocol with
// chromedp, every console message and exception of the page kept, and
// the page checked by axe-core, the accessibility engine, run in it.
package cloud_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromiumPath is the system's Chromium: $CONCLAVE_CHROMIUM, or chromium
// on PATH (Debian's package: `apt-get install chromium`, which .ci/run does
// when it is missing). Without one the test fails: a browser test that
// skips proves nothing.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CONCLAVE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium: install it with `apt-get install chromium` (.ci/run does), or set CONCLAVE_CHROMIUM")
	return ""
}

// browser is one headless Chromium with one tab.
type browser struct {
	t    *testing.T
	ctx  context.Context
	mu   sync.Mutex
	logs []string // the page's console messages and exceptions
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	// The flags Chromium needs on this machine besides chromedp's defaults
	// (headless, no background networking, no sync): no sandbox (tests
	// run as root in CI), and nothing else that reaches for Google's hosts
	// (the network is closed).
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	return open(t, ctx)
}

// tab opens another tab of the same browser: a second window of the same
// person, with its own sessionStorage (it signs in itself).
func (b *browser) tab() *browser {
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	return open(b.t, ctx)
}

// open starts the tab of ctx (the browser too, for the first) and reads
// its console from then on, for as long as the test runs.
func open(t *testing.T, ctx context.Context) *browser {
	b := &browser{t: t, ctx: ctx}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")))
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.logs = append(b.logs, string(m.Type)+": "+m.Text)
			b.mu.Unlock()
		}
	}()
	return b
}

// run runs actions, failing the test with the page's log on an error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.querySelector("main") || document.body).innerText.slice(0, 3000)`))
		b.t.Fatalf("%s: %v\npage text:\n%s\npage log:\n%s", what, err, text, strings.Join(b.log(), "\n"))
	}
}

func (b *browser) log() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.logs...)
}

// evalJS evaluates a JavaScript expression (a promise is awaited) into a T.
func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v\npage log:\n%s", expr, err, strings.Join(b.log(), "\n"))
	}
	return v
}

// do evaluates a JavaScript statement for its effect.
func (b *browser) do(js string) {
	b.t.Helper()
	evalJS[bool](b, "(() => { "+js+"; return true; })()")
}

// waitFor polls a JavaScript condition until it holds.
func (b *browser) waitFor(what, cond string, within time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for !evalJS[bool](b, "Boolean("+cond+")") {
		if time.Now().After(deadline) {
			text := evalJS[string](b, `(document.querySelector("main") || document.body).innerText.slice(0, 3000)`)
			b.t.Fatalf("%s: not within %s (%s)\npage text:\n%s\npage log:\n%s", what, within, cond, text, strings.Join(b.log(), "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshot keeps the page as it is in the tests' screenshots directory
// ($CONCLAVE_SCREENSHOTS, else .local/screenshots of the repository): the
// test's output, and docs/console.md's pictures (make console-docs).
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("CONCLAVE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", ".local", "screenshots")
	}
	require.NoError(b.t, os.MkdirAll(dir, 0o755))
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// axeViolation is one rule axe-core found broken on the page.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// accessibility runs axe-core (pinned in functions/console/web/package.json,
// installed by localstack/console.sh) in the page and returns its serious
// and critical violations: labels, contrast, names, landmarks, focus.
func (b *browser) accessibility() []axeViolation {
	b.t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", ".local", "console-npm", "node_modules", "axe-core", "axe.min.js"))
	require.NoError(b.t, err, "axe-core is installed by localstack/console.sh")
	require.True(b.t, evalJS[bool](b, string(src)+";\ntypeof axe === 'object'"))
	return evalJS[[]axeViolation](b, `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => ({id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(" "))})))`)
}

// errors are the page's log lines that say something went wrong: an
// exception, a console error, a refused policy.
func (b *browser) errors() []string {
	var out []string
	for _, l := range b.log() {
		if strings.HasPrefix(l, string(chromedp.ConsoleException)) || strings.HasPrefix(l, "error") || strings.Contains(l, "Content Security Policy") {
			out = append(out, l)
		}
	}
	return out
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string { return fmt.Sprintf("%q", s) }
