// Package testkit is the layer of what tests share: the in-memory fakes of
// the store ports (memstore: a core and one fake per store, and a
// composite of them all), the store contract they and the DynamoDB stores
// are held to (storetest), the demo team (demo), and the doubles of
// a few domains (consultationstest, fakesecret, logtest). Only tests and
// the local cloud import it; no function links it.
package testkit
