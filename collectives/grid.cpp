#include "collectives/grid.hpp"

#include "collectives/communicator.hpp"

#include <string>

namespace layerbench {

GridLayout GridLayout::make(int world, int inner, int outer) {
  if (inner < 1 || outer < 1)
    throw std::invalid_argument("grid degrees must be >= 1 (got " + std::to_string(inner) + "x" +
                                std::to_string(outer) + ")");
  const long long ranks = static_cast<long long>(inner) * outer;  // no int overflow: 5x858993460 is not 4
  if (ranks != world)
    throw std::invalid_argument("grid " + std::to_string(inner) + "x" + std::to_string(outer) +
                                " needs " + std::to_string(ranks) + " ranks, the world has " +
                                std::to_string(world));
  return GridLayout{inner, outer};
}

std::vector<int> GridLayout::inner_members(int group) const {
  std::vector<int> m;
  for (int i = 0; i < inner; ++i) m.push_back(group * inner + i);
  return m;
}

std::vector<int> GridLayout::outer_members(int group) const {
  std::vector<int> m;
  for (int j = 0; j < outer; ++j) m.push_back(group + j * inner);
  return m;
}

GridComms make_grid(Communicator& world, int inner, int outer) {
  GridComms g{GridLayout::make(world.size(), inner, outer), nullptr, nullptr};
  const int r = world.rank();
  g.inner = world.split(g.layout.inner_group(r), g.layout.inner_rank(r));
  g.outer = world.split(g.layout.outer_group(r), g.layout.outer_rank(r));
  return g;
}

Grid3Comms make_grid3(Communicator& world, int inner, int middle, int outer) {
  if (inner < 1 || middle < 1 || outer < 1 || static_cast<long long>(inner) * middle * outer != world.size())
    throw std::invalid_argument("grid " + std::to_string(inner) + "x" + std::to_string(middle) + "x" +
                                std::to_string(outer) + " does not cover the world of " + std::to_string(world.size()));
  const int r = world.rank();
  const int i = r % inner, m = (r / inner) % middle, o = r / inner / middle;
  Grid3Comms g;
  g.inner = world.split(m + middle * o, i);
  g.middle = world.split(i + inner * o, m);
  g.outer = world.split(i + inner * m, o);
  return g;
}

}  // namespace layerbench
