package api

// ListResponse is the shape of every paginated listing.
type ListResponse[T any] struct {
	Items     []T    `json:"items"`
	NextToken string `json:"next_token,omitempty"`
}
