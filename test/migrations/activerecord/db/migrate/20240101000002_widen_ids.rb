# int -> bigint primary keys; the row-scope table has tombstones by now.
class WidenIds < ActiveRecord::Migration[6.1]
  def up
    %i[ar_row ar_tab ar_res].each { |t| change_column t, :id, :bigint }
  end

  def down
    %i[ar_row ar_tab ar_res].each { |t| change_column t, :id, :integer }
  end
end
