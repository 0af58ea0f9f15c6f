// Package gateclient is the adapter of the expertgate.Gate port that calls
// the expert-gate function synchronously through the Lambda Invoke API
// (locally through the edge, as in AWS). It is kept apart from the gate's
// domain so only the functions that call the gate link the Lambda client.
package gateclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
)

// Invoker is the part of the Lambda client the gate client uses.
type Invoker interface {
	Invoke(context.Context, *lambda.InvokeInput, ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Client calls the expert-gate function synchronously.
type Client struct {
	// Lambda is the Lambda client, built once per cold start.
	Lambda Invoker
	// FunctionName is the expert-gate function's physical name.
	FunctionName string
}

var _ expertgate.Gate = (*Client)(nil)

// functionError is the payload of a function that returned an error.
type functionError struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

// MaxPayload bounds the invocation payload: Lambda refuses a synchronous
// request over 6 MB. A request whose agents would make it larger is sent
// without them, and the gate reads them itself (one query more).
const MaxPayload = 5 << 20

// Score implements expertgate.Gate. A failed invocation, a function error
// and an unreadable answer are EINTERNAL: the caller logs it and routes
// without the gate.
func (c *Client) Score(ctx context.Context, req expertgate.Request) (expertgate.Response, error) {
	req = expertgate.Lean(req)
	payload, err := json.Marshal(req)
	if err != nil {
		return expertgate.Response{}, err
	}
	if len(payload) > MaxPayload && req.Agents != nil {
		req.Agents = nil
		if payload, err = json.Marshal(req); err != nil {
			return expertgate.Response{}, err
		}
	}
	// The gate's invocation continues the turn's trace (its door reads
	// the payload's trace field).
	payload = tracing.Inject(ctx, payload)
	out, err := c.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(c.FunctionName), Payload: payload})
	if err != nil {
		return expertgate.Response{}, apperr.Wrap(apperr.EINTERNAL, err, "invoking the expert gate failed")
	}
	if out.FunctionError != nil {
		var fe functionError
		_ = json.Unmarshal(out.Payload, &fe)
		return expertgate.Response{}, apperr.Wrap(apperr.EINTERNAL, fmt.Errorf("%s: %s", fe.Type, fe.Message), "the expert gate failed")
	}
	var resp expertgate.Response
	if err := json.Unmarshal(out.Payload, &resp); err != nil {
		return expertgate.Response{}, apperr.Wrap(apperr.EINTERNAL, err, "the expert gate answered with an unreadable payload")
	}
	return resp, nil
}
