package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The edge looks for the jar of the version the pom pins; the two must not
// drift apart.
func TestDynamoDBVersionMatchesThePom(t *testing.T) {
	pom, err := os.ReadFile("../dynamodb/pom.xml")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(pom), "<artifactId>DynamoDBLocal</artifactId>\n      <version>"+dynamoDBVersion+"</version>"),
		"localstack/dynamodb/pom.xml pins a DynamoDB Local other than %s", dynamoDBVersion)
}
