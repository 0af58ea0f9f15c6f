package lambdafn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// extension sends each invocation's spans after its answer has gone back:
// a Lambda internal extension (the Extensions API), registered by the
// function's own process for INVOKE events. Lambda returns a function's
// response as soon as the runtime posts it, and ends the invocation only
// when every extension has asked for its next event, so work an extension
// does between the two, here the export of the invocation's spans to
// X-Ray, is off the caller's path (Lambda bills it, and the next
// invocation of this environment waits for it). That is what the ADOT
// layer's collector does, without a layer: the flush is the only work.
type extension struct {
	base   string // http://$AWS_LAMBDA_RUNTIME_API/2020-01-01/extension
	id     string
	client *http.Client
	work   chan func()
	dead   atomic.Bool
}

// exitProcess ends the process (a test's stand-in records it instead).
var exitProcess = os.Exit

// extensionName names the extension to Lambda (an internal extension's
// name is free; it appears in the function's logs).
const extensionName = "conclave-traces"

// registerExtension registers the extension with the Extensions API at api
// (AWS_LAMBDA_RUNTIME_API) and starts its loop. It must run during init,
// before the runtime asks for its first invocation.
func registerExtension(api string) (*extension, error) {
	e := &extension{base: "http://" + api + "/2020-01-01/extension", client: &http.Client{}, work: make(chan func(), 1)}
	req, err := http.NewRequest(http.MethodPost, e.base+"/register", bytes.NewReader([]byte(`{"events":["INVOKE"]}`)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Lambda-Extension-Name", extensionName)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	e.id = resp.Header.Get("Lambda-Extension-Identifier")
	if resp.StatusCode != http.StatusOK || e.id == "" {
		return nil, fmt.Errorf("extension register: %s", resp.Status)
	}
	go e.loop()
	return e, nil
}

// invokeEvent is what the Extensions API says of an invocation.
type invokeEvent struct {
	EventType  string `json:"eventType"`
	DeadlineMs int64  `json:"deadlineMs"`
}

// loop asks for each invocation (which also tells Lambda the one before
// is done) and runs the work the door hands over once its handler has
// answered, or nothing if the invocation's deadline passes first.
func (e *extension) loop() {
	defer e.dead.Store(true)
	for {
		ev, err := e.nextRetried()
		if err != nil {
			// Lambda holds every invocation until a registered extension
			// asks again: an extension that cannot is the environment's
			// end (Lambda starts a new one), not a hang to each timeout.
			fmt.Fprintln(os.Stderr, `{"level":"ERROR","msg":"tracing extension","error":`+strconv.Quote(err.Error())+`}`)
			exitProcess(1)
			return
		}
		if ev.EventType != "INVOKE" {
			return
		}
		select {
		case f := <-e.work:
			f()
		case <-time.After(time.Until(time.UnixMilli(ev.DeadlineMs))):
		}
	}
}

// nextRetried is next, tried three times a moment apart.
func (e *extension) nextRetried() (invokeEvent, error) {
	var err error
	for try := range 3 {
		var ev invokeEvent
		if ev, err = e.next(); err == nil {
			return ev, nil
		}
		time.Sleep(time.Duration(try+1) * 50 * time.Millisecond)
	}
	return invokeEvent{}, err
}

func (e *extension) next() (invokeEvent, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, e.base+"/event/next", nil)
	if err != nil {
		return invokeEvent{}, err
	}
	req.Header.Set("Lambda-Extension-Identifier", e.id)
	resp, err := e.client.Do(req)
	if err != nil {
		return invokeEvent{}, err
	}
	defer resp.Body.Close()
	var ev invokeEvent
	if resp.StatusCode != http.StatusOK {
		return ev, fmt.Errorf("extension next: %s", resp.Status)
	}
	return ev, json.NewDecoder(resp.Body).Decode(&ev)
}

// after runs f in the invocation's post-answer phase; inline when the
// extension has stopped, or already holds work it has not run.
func (e *extension) after(f func()) {
	if e.dead.Load() {
		f()
		return
	}
	select {
	case e.work <- f:
	default:
		f()
	}
}
