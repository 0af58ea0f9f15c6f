package api

import _ "embed"

// OpenAPI is the API's OpenAPI 3 document; a test keeps it equal to the
// manifest's routes.
//
//go:embed openapi.yaml
var OpenAPI []byte
