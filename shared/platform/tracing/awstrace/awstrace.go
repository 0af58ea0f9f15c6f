// Package awstrace makes every AWS SDK call of a function a client span
// of the invocation's trace (the door wires it into the function's AWS
// configuration).
package awstrace

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// Instrument makes every call of every client built from cfg a client
// span of the invocation's trace: "DynamoDB.PutItem" with the OpenTelemetry
// AWS SDK conventions (rpc.system aws-api, rpc.service, rpc.method,
// aws.request_id, cloud.region), its retries, its HTTP status, and an
// error status for a failed call (a throttle says so). The span covers the
// call's retries. A small SDK middleware rather than the contrib otelaws:
// that package links the S3, SNS, SQS and DynamoDB clients into every
// function, whatever it calls.
func Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), func(s *middleware.Stack) error {
		if _, ok := s.Initialize.Get(middlewareID); ok {
			return nil
		}
		// Last in the initialize step: an older client (the Step Functions
		// one) names its service and operation there, not before.
		return s.Initialize.Add(middleware.InitializeMiddlewareFunc(middlewareID, awsCall), middleware.After)
	})
}

const middlewareID = "ConclaveTraceSpan"

// awsCall wraps one call, its retries included, in a client span.
func awsCall(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	if !tracing.Recording(ctx) {
		return next.HandleInitialize(ctx, in)
	}
	service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	ctx, span := tracing.Start(ctx, service+"."+op, trace.SpanKindClient,
		attribute.String("rpc.system", "aws-api"), attribute.String("rpc.service", service),
		attribute.String("rpc.method", op), attribute.String("cloud.region", awsmiddleware.GetRegion(ctx)))
	out, md, err := next.HandleInitialize(ctx, in)
	if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
		span.SetAttributes(attribute.String("aws.request_id", id))
	}
	if r, ok := retry.GetAttemptResults(md); ok && len(r.Results) > 1 {
		span.SetAttributes(attribute.Int("aws.retries", len(r.Results)-1))
	}
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	}
	if err != nil {
		var api smithy.APIError
		if errors.As(err, &api) {
			span.SetAttributes(attribute.Bool("aws.throttled", strings.Contains(api.ErrorCode(), "Throttl")))
		}
		tracing.Fail(ctx, span, err)
	}
	span.End()
	return out, md, err
}
