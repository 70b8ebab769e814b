/* Stack text: C++ template arguments shortened, operators left alone. */
#include "stackfmt.h"

#include <criterion/criterion.h>
#include <string.h>

static const char *shorter(const char *name)
{
	static char buf[256];
	return shorten_templates(name, buf, sizeof(buf));
}

Test(stackfmt, template_arguments_are_shortened)
{
	cr_expect_str_eq(shorter("std::vector<int, std::allocator<int> >::push_back(int const&)"),
			 "std::vector<...>::push_back(int const&)");
	cr_expect_str_eq(shorter("void std::vector<int*, std::allocator<int*> >::_M_realloc_insert<int*>"
				 "(__gnu_cxx::__normal_iterator<int**, std::vector<int*> >, int*&&)"),
			 "void std::vector<...>::_M_realloc_insert<...>(__gnu_cxx::__normal_iterator<...>, int*&&)");
	cr_expect_str_eq(shorter("main"), "main");
	cr_expect_str_eq(shorter("Point::operator<(Point const&) const"), "Point::operator<(Point const&) const");
	cr_expect_str_eq(shorter("std::ostream::operator<<(int)"), "std::ostream::operator<<(int)");
	cr_expect_str_eq(shorter("Iter::operator->() const"), "Iter::operator->() const");
	cr_expect_null(shorten_templates(NULL, (char[8]){ 0 }, 8));
}
