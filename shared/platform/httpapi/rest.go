package httpapi

import "github.com/aws/aws-lambda-go/events"

// RESTEvent reads a REST API proxy event (payload 1.0) as the HTTP API's
// payload 2.0 event, as ServeStream does, for a streaming function that
// answers without a Router (the A2A agent on the streaming API, whose
// handler reads the HTTP API's event on either API).
func RESTEvent(ev events.APIGatewayProxyRequest) events.APIGatewayV2HTTPRequest {
	return restEvent(ev)
}
