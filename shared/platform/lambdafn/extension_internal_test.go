package lambdafn

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extensionsAPI stands in for Lambda's Extensions API: it registers one
// extension and answers each of its next calls with the invocation the
// test starts, recording when the extension asked again (the invocation's
// end for Lambda).
type extensionsAPI struct {
	mu       sync.Mutex
	invokes  chan int64 // deadlines (ms) of the invocations to hand out
	closed   chan struct{}
	asked    []time.Time
	register string
}

func (a *extensionsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/2020-01-01/extension/register":
		a.mu.Lock()
		a.register = r.Header.Get("Lambda-Extension-Name") + " " + r.Method
		a.mu.Unlock()
		w.Header().Set("Lambda-Extension-Identifier", "ext-1")
		_, _ = w.Write([]byte(`{}`))
	case strings.HasSuffix(r.URL.Path, "/event/next") && r.Header.Get("Lambda-Extension-Identifier") == "ext-1":
		a.mu.Lock()
		a.asked = append(a.asked, time.Now())
		a.mu.Unlock()
		select {
		case d := <-a.invokes:
			_, _ = fmt.Fprintf(w, `{"eventType":"INVOKE","deadlineMs":%d,"requestId":"r"}`, d)
		case <-r.Context().Done():
		case <-a.closed:
			http.Error(w, "shut down", http.StatusInternalServerError)
		}
	default:
		http.Error(w, "unexpected", http.StatusBadRequest)
	}
}

func (a *extensionsAPI) nexts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

// The extension registers for INVOKE, runs the work an invocation hands
// over after the answer and only then asks for the next event (which ends
// the invocation for Lambda); an invocation that hands nothing over ends
// at its deadline.
func TestTheExtensionRunsTheFlushAfterTheAnswer(t *testing.T) {
	exited := make(chan int, 1)
	exitProcess = func(code int) { exited <- code }
	defer func() { exitProcess = os.Exit }()
	api := &extensionsAPI{invokes: make(chan int64), closed: make(chan struct{})}
	srv := httptest.NewServer(api)
	defer srv.Close()
	e, err := registerExtension(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	assert.Equal(t, extensionName+" POST", api.register)
	require.Eventually(t, func() bool { return api.nexts() == 1 }, 2*time.Second, time.Millisecond, "it asks for the first event at init")

	api.invokes <- time.Now().Add(time.Minute).UnixMilli()
	ran := make(chan struct{})
	release := make(chan struct{})
	e.after(func() { close(ran); <-release })
	<-ran
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, 1, api.nexts(), "the invocation lasts while the flush runs")
	close(release)
	require.Eventually(t, func() bool { return api.nexts() == 2 }, 2*time.Second, time.Millisecond, "then it asks for the next event")

	api.invokes <- time.Now().Add(50 * time.Millisecond).UnixMilli()
	require.Eventually(t, func() bool { return api.nexts() == 3 }, 2*time.Second, time.Millisecond, "nothing handed over: done at the deadline")

	// An API that fails for good ends the process (Lambda holds every
	// invocation until a registered extension asks again).
	close(api.closed)
	select {
	case code := <-exited:
		assert.Equal(t, 1, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the extension did not give up")
	}
	require.Eventually(t, e.dead.Load, time.Second, time.Millisecond)
}

// Without a live extension, the work runs at once, in the caller.
func TestAfterRunsInlineWhenTheExtensionIsGone(t *testing.T) {
	e := &extension{work: make(chan func(), 1)}
	e.dead.Store(true)
	ran := false
	e.after(func() { ran = true })
	assert.True(t, ran)
}
