// C++ new/delete and a leak inside a namespaced method: names must come out demangled.
#include <string>
#include <vector>

namespace shapes {
struct Canvas {
	std::vector<int *> cells;
	__attribute__((noinline)) void paint(int n)
	{
		for (int i = 0; i < n; i++)
			cells.push_back(new int[4]); // LEAK-CXX
	}
};
}

int main()
{
	shapes::Canvas *c = new shapes::Canvas;
	c->paint(3);
	std::string s(100, 'x');
	return s.size() == 100 ? 0 : 1;
}
