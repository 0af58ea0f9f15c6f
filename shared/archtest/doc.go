// Package archtest holds the module's architecture as rules the code is
// tested against, rather than its behaviour. Its code is the rules: the
// order of the wings and layers of shared/ (Entries, architecture
// decision 11) and the places allowed to link AWS service clients
// (AWSClientLocations, decision 7), with what make docs generates from
// them (localstack/archdoc). Its tests hold the code to them: no import
// against the order, no test kit in a function, no domain package linking
// an AWS client, no new top-level package outside the table; and the code
// a function runs logs only with a context, so every line carries the ids
// shared/platform/logctx puts there. No function links it.
package archtest
