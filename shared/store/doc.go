// Package store is the layer of DynamoDB adapters: the single table's
// core (dynamo: keys, transactions, paging, counters) and one store per
// domain (agentstore, taskstore, …), each implementing its domain's Store
// port. It is a layer over the wings, not a folder per wing, because one
// turn's commit writes several domains in one transaction. dynamotest
// holds the adapters' unit-test fakes of the DynamoDB client.
package store
