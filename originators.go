package lendgraph

// OriginatorsService serves originators and their counts and breakdowns.
type OriginatorsService struct {
	*ResourceService[Originator]
}

// CompaniesService serves companies and their branches.
type CompaniesService struct {
	*ResourceService[Company]
}
