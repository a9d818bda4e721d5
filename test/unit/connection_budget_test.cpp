#include "core/connection_budget.h"

#include <gtest/gtest.h>

using picoroute::budget_exceeded_detail;
using picoroute::budget_step;
using picoroute::budget_wait_bound_ms;
using picoroute::BudgetCheck;
using picoroute::BudgetStep;

namespace {

BudgetCheck check(int64_t budget, uint64_t everywhere, uint64_t here) {
    BudgetCheck c;
    c.budget = budget;
    c.open_everywhere = everywhere;
    c.open_here = here;
    c.wait_bound_ms = 1000;
    return c;
}

}  // namespace

TEST(ConnectionBudget, NoLimitAlwaysOpens) {
    EXPECT_EQ(budget_step(check(0, 1000, 10)), BudgetStep::Open);
    EXPECT_EQ(budget_step(check(-1, 5, 0)), BudgetStep::Open);
}

TEST(ConnectionBudget, UnderTheBudgetOpens) {
    EXPECT_EQ(budget_step(check(3, 2, 2)), BudgetStep::Open);
    EXPECT_EQ(budget_step(check(1, 0, 0)), BudgetStep::Open);
}

TEST(ConnectionBudget, AtTheBudgetClosesItsOwnIdleFirst) {
    BudgetCheck c = check(2, 2, 1);
    c.own_idle_left = true;
    EXPECT_EQ(budget_step(c), BudgetStep::CloseOwnIdle);
}

TEST(ConnectionBudget, AtTheBudgetWaitsForOthers) {
    EXPECT_EQ(budget_step(check(2, 2, 1)), BudgetStep::Wait);
    EXPECT_EQ(budget_step(check(1, 1, 0)), BudgetStep::Wait);
    EXPECT_EQ(budget_step(check(1, 3, 0)), BudgetStep::Wait);  // lowered while they were open
}

TEST(ConnectionBudget, WaitEndsAtItsBound) {
    BudgetCheck c = check(1, 1, 0);
    c.waited_ms = 999;
    EXPECT_EQ(budget_step(c), BudgetStep::Wait);
    c.waited_ms = 1000;
    EXPECT_EQ(budget_step(c), BudgetStep::Fail);
    c.wait_bound_ms = 0;
    c.waited_ms = 0;
    EXPECT_EQ(budget_step(c), BudgetStep::Fail);
}

TEST(ConnectionBudget, NeverWaitsForItself) {
    EXPECT_EQ(budget_step(check(2, 2, 2)), BudgetStep::Fail);
    EXPECT_EQ(budget_step(check(1, 3, 1)), BudgetStep::Fail);
}

TEST(ConnectionBudget, WaitBoundIsFailoverWaitWithoutStatementTimeout) {
    EXPECT_EQ(budget_wait_bound_ms(0, 700, 10000), 10000);
    EXPECT_EQ(budget_wait_bound_ms(0, 0, 0), 0);
}

TEST(ConnectionBudget, WaitBoundEndsBeforeStatementTimeout) {
    EXPECT_EQ(budget_wait_bound_ms(5000, 0, 10000), 4900);   // margin 100 ms
    EXPECT_EQ(budget_wait_bound_ms(5000, 1000, 100), 3900);  // what is left of the statement's
    EXPECT_EQ(budget_wait_bound_ms(500, 0, 10000), 450);     // margin a tenth
    EXPECT_EQ(budget_wait_bound_ms(500, 600, 10000), 0);     // nothing left
}

TEST(ConnectionBudget, DetailNamesInstanceAndBudget) {
    BudgetCheck c = check(1, 1, 0);
    c.waited_ms = 1200;
    EXPECT_EQ(budget_exceeded_detail("h:5432", c),
              "picoroute.max_connections_per_instance is 1 and 1 connections to instance h:5432 "
              "are open in all sessions (0 in this one); none was closed within 1200 ms.");
    EXPECT_EQ(budget_exceeded_detail("h:5432", check(2, 2, 2)),
              "picoroute.max_connections_per_instance is 2 and 2 connections to instance h:5432 "
              "are open in all sessions (2 in this one); this session holds them all, busy with "
              "its own statements.");
}
