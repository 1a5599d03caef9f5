package workload

// Jain returns Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when every
// element is equal, 1/n when one element has everything. It returns 0 for an
// empty slice or when every element is 0 (nothing to be fair about).
func Jain(xs []int64) float64 {
	var sum, sumSq float64
	for _, x := range xs {
		f := float64(x)
		sum += f
		sumSq += f * f
	}
	if len(xs) == 0 || sumSq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sumSq)
}

// MinMax returns the smallest and largest elements of xs (0, 0 when empty).
func MinMax(xs []int64) (lo, hi int64) {
	for i, x := range xs {
		if i == 0 || x < lo {
			lo = x
		}
		if i == 0 || x > hi {
			hi = x
		}
	}
	return lo, hi
}
