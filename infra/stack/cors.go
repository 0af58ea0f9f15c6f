package stack

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// ContextCORSOrigins lists the browser origins a stage's APIs answer
// (EnvConfig.CORSOrigins): -c cors.origins=https://chat.example.com,…
// or a list in cdk.json. None (the default): no CORS, neither API
// answers a preflight.
const ContextCORSOrigins = "cors.origins"

// devStages may list plain-HTTP loopback origins (a dev server on
// localhost); every other stage takes https origins only.
var devStages = []string{"dev", "localstack"}

// parseCORSOrigins reads the stage's origins: comma-separated or a list,
// each https://host[:port] (or http://localhost:port or
// http://127.0.0.1:port in a dev stage), none twice.
func parseCORSOrigins(stage string, v any) ([]string, error) {
	parts, err := contextList(ContextCORSOrigins, "an origin", "origins", v)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range parts {
		if err := checkOrigin(stage, o); err != nil {
			return nil, fmt.Errorf("-c %s: %w", ContextCORSOrigins, err)
		}
		if slices.Contains(out, o) {
			return nil, fmt.Errorf("-c %s: %q given twice", ContextCORSOrigins, o)
		}
		out = append(out, o)
	}
	return out, nil
}

// checkOrigin returns an error unless o is an origin as a browser sends
// it (scheme, host, optional port; no path, no trailing slash, lower
// case) that the stage may list.
func checkOrigin(stage, o string) error {
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" ||
		strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#") || strings.Contains(u.Hostname(), "*") ||
		o != strings.ToLower(o) || u.String() != o {
		return fmt.Errorf("%q is not an origin (https://host[:port], lower case, no path)", o)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %s is not 1 to 65535", o, p)
		}
	}
	loopback := u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1"
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopback && u.Port() != "" && slices.Contains(devStages, stage):
		return nil
	case u.Scheme == "http" && loopback && u.Port() != "":
		return fmt.Errorf("%q: plain-HTTP loopback origins are for the dev stages (%s) only, not %s", o, strings.Join(devStages, ", "), stage)
	}
	return fmt.Errorf("%q: an origin is https://host[:port] (http://localhost:port or http://127.0.0.1:port in dev)", o)
}

// httpAPICORS is the HTTP API's CORS configuration for origins: the
// gateway answers every preflight and adds the allow headers to the
// routes' answers; nil without origins.
func httpAPICORS(origins []string) *awsapigatewayv2.CorsPreflightOptions {
	if len(origins) == 0 {
		return nil
	}
	var methods []awsapigatewayv2.CorsHttpMethod
	for _, m := range manifest.CORSMethods {
		methods = append(methods, awsapigatewayv2.CorsHttpMethod(m))
	}
	methods = append(methods, awsapigatewayv2.CorsHttpMethod_OPTIONS)
	// No AllowCredentials: the credential is a header the client sets, not
	// a cookie, and never a query parameter.
	return &awsapigatewayv2.CorsPreflightOptions{
		AllowOrigins: jsii.Strings(origins...), AllowMethods: &methods,
		AllowHeaders: jsii.Strings(manifest.CORSHeaders...), ExposeHeaders: jsii.Strings(manifest.CORSExposeHeaders...),
		MaxAge: awscdk.Duration_Seconds(jsii.Number(manifest.CORSMaxAgeSeconds)),
	}
}

// restAPICORS is the streaming API's preflight answer for origins: an
// OPTIONS method (a mock integration, no authorizer) on every resource;
// nil without origins. The streamed answers themselves pass the
// functions' headers untouched (a proxy integration).
func restAPICORS(origins []string) *awsapigateway.CorsOptions {
	if len(origins) == 0 {
		return nil
	}
	return &awsapigateway.CorsOptions{
		AllowOrigins: jsii.Strings(origins...), AllowMethods: jsii.Strings(manifest.CORSMethods...),
		AllowHeaders: jsii.Strings(manifest.CORSHeaders...), MaxAge: awscdk.Duration_Seconds(jsii.Number(manifest.CORSMaxAgeSeconds)),
	}
}
