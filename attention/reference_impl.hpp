#pragma once
// Template body of attention_rows (included by reference.hpp).
#include <algorithm>
#include <cmath>
#include <vector>

namespace layerbench::attention {

template <class Store>
void attention_rows(const TensorView& q, const TensorView& k, const TensorView& v, long long batch,
                    long long seq_kv, int heads, int head_dim, float scale,
                    std::span<const long long> rows, Store&& store) {
  std::vector<double> scores(static_cast<std::size_t>(seq_kv));  // [Skv]
  std::vector<double> acc(static_cast<std::size_t>(head_dim));    // [D]
  std::vector<float> qrow(static_cast<std::size_t>(head_dim));    // [D]
  for (long long b = 0; b < batch; ++b)
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (int h = 0; h < heads; ++h) {
        const long long r = rows[i];
        for (int d = 0; d < head_dim; ++d) qrow[static_cast<std::size_t>(d)] = q.at(b, r, h, d);
        double m = -INFINITY;
        for (long long j = 0; j < seq_kv; ++j) {
          double s = 0;
          for (int d = 0; d < head_dim; ++d)
            s += static_cast<double>(qrow[static_cast<std::size_t>(d)]) * k.at(b, j, h, d);
          s *= scale;
          scores[static_cast<std::size_t>(j)] = s;
          m = std::max(m, s);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (long long j = 0; j < seq_kv; ++j) {
          const double p = std::exp(scores[static_cast<std::size_t>(j)] - m);
          sum += p;
          for (int d = 0; d < head_dim; ++d) acc[static_cast<std::size_t>(d)] += p * v.at(b, j, h, d);
        }
        for (int d = 0; d < head_dim; ++d)
          store(b, static_cast<long long>(i), h, d, static_cast<float>(acc[static_cast<std::size_t>(d)] / sum));
      }
}

}  // namespace layerbench::attention
