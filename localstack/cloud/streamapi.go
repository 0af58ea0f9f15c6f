package cloud

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// StreamAPIHandler serves the streaming API as API Gateway serves a REST
// API whose Lambda proxy integrations stream (responseTransferMode STREAM):
// resource match, the REQUEST authorizer on X-Api-Key or a bearer token
// (401 without either, 403 on its Deny policy; no caching), a payload 1.0 proxy event,
// and the function's streamed response: the edge reads what the Lambda
// runtime would send — the JSON prelude (status, headers), eight zero
// bytes, then the body — and writes the body on as it comes, flushed, so
// a client reads each event when the function writes it. A client that
// goes away closes the function's body (its writes then fail), as the
// invocation's stream would be cut in AWS.
func (e *Edge) StreamAPIHandler() http.Handler {
	routes := compileRoutes(manifest.StreamRoutes())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqID := newRequestID()
		w.Header().Set("X-Amzn-Requestid", reqID)
		target, params := matchRoute(routes, r.Method, r.URL.Path)
		if target == nil {
			// A REST API answers an unknown resource or method so.
			gatewayError(w, http.StatusForbidden, "Missing Authentication Token")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20+1))
		if err != nil || len(body) > 10<<20 {
			gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
			return
		}
		ev := e.restEvent(r, target, params, body, reqID)
		ctx := withAPIKey(r.Context(), r.Header.Get("X-Api-Key"))
		if !target.public {
			if credential(r.Header.Get("X-Api-Key"), r.Header.Get("Authorization")) == "" {
				gatewayError(w, http.StatusUnauthorized, "Unauthorized")
				return
			}
			authz, status := e.authorizeREST(ctx, ev)
			switch status {
			case 0:
				ev.RequestContext.Authorizer = authz
			case http.StatusForbidden:
				restDenied(w)
				return
			default:
				gatewayError(w, status, "Internal server error")
				return
			}
		}
		e.serveStream(w, r, target.function, ev)
	})
}

// restDenied is a REST API's answer to an authorizer's Deny policy.
func restDenied(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", "AccessDeniedException")
	w.WriteHeader(http.StatusForbidden)
	_ = json.NewEncoder(w).Encode(map[string]string{"Message": "User is not authorized to access this resource with an explicit deny"})
}

// restEvent is the REST API's proxy event (payload 1.0) of r.
func (e *Edge) restEvent(r *http.Request, rt *route, params map[string]string, body []byte, reqID string) events.APIGatewayProxyRequest {
	headers, multi := map[string]string{}, map[string][]string{}
	for k, vs := range r.Header {
		headers[k], multi[k] = vs[len(vs)-1], vs
	}
	var query map[string]string
	var mquery map[string][]string
	for k, vs := range r.URL.Query() {
		if query == nil {
			query, mquery = map[string]string{}, map[string][]string{}
		}
		query[k], mquery[k] = vs[len(vs)-1], vs
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	path := "/" + strings.Join(rt.parts, "/")
	now := time.Now()
	ev := events.APIGatewayProxyRequest{
		Resource: path, Path: r.URL.Path, HTTPMethod: r.Method, Headers: headers, MultiValueHeaders: multi,
		QueryStringParameters: query, MultiValueQueryStringParameters: mquery, PathParameters: params,
		RequestContext: events.APIGatewayProxyRequestContext{
			AccountID: Account, ResourcePath: path, Stage: e.Resources.Names.Stage, RequestID: reqID, APIID: "localstream",
			HTTPMethod: r.Method, Protocol: r.Proto, DomainName: r.Host, RequestTimeEpoch: now.UnixMilli(),
			Identity: events.APIGatewayRequestIdentity{SourceIP: ip, UserAgent: r.UserAgent()},
		},
	}
	if len(params) == 0 {
		ev.PathParameters = nil
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// authorizeREST runs the authorizer function with the REST API's REQUEST
// event; status is 0 when its policy allows the method. The context is
// handed on as a REST API hands it: every value a string.
func (e *Edge) authorizeREST(ctx context.Context, ev events.APIGatewayProxyRequest) (map[string]any, int) {
	arn := fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/%s/%s%s", Region, Account, ev.RequestContext.APIID, ev.RequestContext.Stage, ev.HTTPMethod, ev.Path)
	req := events.APIGatewayCustomAuthorizerRequestTypeRequest{
		Type: "REQUEST", MethodArn: arn, Resource: ev.Resource, Path: ev.Path, HTTPMethod: ev.HTTPMethod,
		Headers: ev.Headers, MultiValueHeaders: ev.MultiValueHeaders, QueryStringParameters: ev.QueryStringParameters,
		PathParameters: ev.PathParameters,
		RequestContext: events.APIGatewayCustomAuthorizerRequestTypeRequestContext{
			Path: ev.Path, AccountID: Account, ResourcePath: ev.Resource, Stage: ev.RequestContext.Stage, RequestID: ev.RequestContext.RequestID,
			APIID: ev.RequestContext.APIID, HTTPMethod: ev.HTTPMethod,
			Identity: events.APIGatewayCustomAuthorizerRequestTypeRequestIdentity{SourceIP: ev.RequestContext.Identity.SourceIP},
		},
	}
	payload, _ := json.Marshal(req)
	out, _, err := e.invoke(ctx, "authorizer", payload)
	if err != nil {
		return nil, http.StatusInternalServerError
	}
	var resp events.APIGatewayCustomAuthorizerResponse
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.PolicyDocument.Statement) == 0 {
		return nil, http.StatusInternalServerError
	}
	for _, st := range resp.PolicyDocument.Statement {
		if st.Effect != "Allow" {
			return nil, http.StatusForbidden
		}
	}
	authz := map[string]any{"principalId": resp.PrincipalID}
	for k, v := range resp.Context {
		switch x := v.(type) {
		case string:
			authz[k] = x
		default:
			raw, _ := json.Marshal(x)
			authz[k] = strings.Trim(string(raw), `"`)
		}
	}
	return authz, 0
}

// serveStream invokes a streaming function and writes its response as it
// comes.
func (e *Edge) serveStream(w http.ResponseWriter, r *http.Request, name string, ev events.APIGatewayProxyRequest) {
	e.invocations.Add(1)
	h, ok := e.Handlers[name].(lambdafn.Streamer)
	if !ok {
		gatewayError(w, http.StatusInternalServerError, "Internal server error")
		return
	}
	fn, _ := manifest.Lookup(name)
	// The invocation's context ends with its timeout or once its body has
	// been read to the end: a client that goes away closes the body (the
	// function's writes fail) but does not end the invocation.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Duration(fn.Timeout)*time.Second)
	running := false
	defer func() {
		if running {
			// Released when the invocation times out.
			go func() { <-ctx.Done(); cancel() }()
			return
		}
		cancel()
	}()
	ctx, calls, reqID := countedContext(ctx, e.Resources.Names.Function(name))
	start := time.Now()
	payload, _ := json.Marshal(ev)
	resp, err := h(ctx, ev)
	if err != nil || resp == nil {
		e.record(name, reqID, payload, calls, time.Since(start), err)
		gatewayError(w, http.StatusInternalServerError, "Internal server error")
		return
	}
	defer resp.Close()
	if resp.ContentType() != "application/vnd.awslambda.http-integration-response" {
		gatewayError(w, http.StatusInternalServerError, "Internal server error")
		return
	}
	// The runtime's bytes: the prelude up to eight zero bytes, then the body.
	br := bufio.NewReader(resp)
	status, headers, err := readPrelude(br)
	if err != nil {
		e.Log.Error("stream prelude", "function", name, "error", err.Error())
		gatewayError(w, http.StatusInternalServerError, "Internal server error")
		return
	}
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("X-Amzn-Requestid", ev.RequestContext.RequestID)
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	running = !copyFlushing(r.Context(), w, flusher, br)
	e.record(name, reqID, payload, calls, time.Since(start), nil)
}

// readPrelude reads the JSON prelude of a streamed proxy response and the
// eight zero bytes after it.
func readPrelude(br *bufio.Reader) (int, map[string]string, error) {
	var raw []byte
	zeros := 0
	for zeros < 8 {
		b, err := br.ReadByte()
		if err != nil {
			return 0, nil, fmt.Errorf("prelude: %w", err)
		}
		if b == 0 {
			zeros++
			continue
		}
		if zeros > 0 {
			return 0, nil, fmt.Errorf("prelude: %d zero bytes, then data", zeros)
		}
		raw = append(raw, b)
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return 0, nil, fmt.Errorf("prelude %q: %w", raw, err)
	}
	if p.StatusCode == 0 {
		p.StatusCode = http.StatusOK
	}
	return p.StatusCode, p.Headers, nil
}

// copyFlushing copies the body to the client, flushing each read, until
// the body ends (true) or the client goes away (false).
func copyFlushing(ctx context.Context, w io.Writer, f http.Flusher, body io.Reader) bool {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil || ctx.Err() != nil {
				return false
			}
			if f != nil {
				f.Flush()
			}
		}
		if err != nil {
			return true
		}
	}
}
