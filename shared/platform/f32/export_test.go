package f32

// LanesGo is lanesGo, for the tests.
var LanesGo = lanesGo
